import CSodium

/// Bytes kept in libsodium guarded memory: locked into RAM and excluded from core dumps, and
/// wiped when the buffer is released or `wipe()` is called. Buffers up to 1 MiB take a slot of a
/// shared `SecurePool` region; larger ones get their own `sodium_malloc` allocation with guard
/// pages. Bytes are reachable only inside closures.
public final class SecureBytes: @unchecked Sendable {
    // Unchecked: a pointer into sodium_malloc memory, read by any thread through closures; `wipe` is for its last user.
    private var pointer: UnsafeMutableRawPointer?
    private var region: SecureRegion?
    /// The number of bytes held.
    public let count: Int

    /// Allocates `count` zeroed bytes of guarded memory.
    /// - Throws: `CryptoError.allocationFailed` past `SecureBytes.budget` or when `sodium_malloc`
    ///   fails (out of memory or memory mappings).
    public init(count: Int) throws {
        precondition(count >= 0)
        Sodium.ensure()
        self.count = count
        let block = try SecurePool.shared.allocate(count)
        pointer = block.pointer
        region = block.region
    }

    /// Most bytes of guarded memory the process may map, pool regions and large buffers together;
    /// past it allocation throws `CryptoError.allocationFailed`. Lowering it frees nothing.
    /// Default: 1 GiB, or RLIMIT_MEMLOCK when that is finite and larger.
    public static var budget: Int {
        get { SecurePool.shared.budget }
        set { SecurePool.shared.budget = newValue }
    }

    /// The least bytes a new pool region of a size class maps and locks (it still holds at least
    /// four buffers of the class); later regions of the class grow as before. Default 256 KiB,
    /// which keeps a daemon that holds many buffers to few mappings. A short-lived process that
    /// holds a few small buffers (the CLI) sets a page: it then locks and zeroes a few pages
    /// instead of 256 KiB per size class it touches. Affects regions made after the change.
    public static var smallestRegion: Int {
        get { SecurePool.shared.smallestRegion }
        set { SecurePool.shared.smallestRegion = newValue }
    }

    /// Bytes of guarded memory mapped now, counted against `budget`.
    public static var mappedBytes: Int { SecurePool.shared.mappedBytes }

    /// Random bytes from `randombytes_buf`. - Throws: `CryptoError.allocationFailed`.
    public static func random(count: Int) throws -> SecureBytes {
        let bytes = try SecureBytes(count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return bytes
    }

    /// Copies `bytes` into guarded memory. The caller remains responsible for wiping its copy.
    /// - Throws: `CryptoError.allocationFailed`.
    public convenience init<C: Collection>(copying bytes: C) throws where C.Element == UInt8 {
        try self.init(count: bytes.count)
        withUnsafeMutableBytes { dst in
            // One copy from contiguous storage (arrays, `Data`); element by element otherwise.
            let copied: Void? = bytes.withContiguousStorageIfAvailable { src in
                if let from = src.baseAddress, src.count > 0 { dst.baseAddress!.copyMemory(from: from, byteCount: src.count) }
            }
            if copied == nil { _ = dst.initializeMemory(as: UInt8.self, from: bytes) }
        }
    }

    /// Copies the bytes of a raw buffer into guarded memory. - Throws: `CryptoError.allocationFailed`.
    public convenience init(copying raw: UnsafeRawBufferPointer) throws {
        try self.init(count: raw.count)
        if raw.count > 0 {
            withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: raw.baseAddress!, byteCount: raw.count) }
        }
    }

    deinit { wipe() }

    /// True once `wipe()` has released the memory.
    public var isWiped: Bool { pointer == nil }

    /// Zeroes and releases the memory now. Any later access traps.
    public func wipe() {
        guard let p = pointer else { return }
        pointer = nil
        SecurePool.shared.release(SecurePool.Block(pointer: p, region: region), count: count)  // zeroes it
        region = nil
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let p = pointer else { preconditionFailure("SecureBytes used after wipe") }
        return try body(UnsafeRawBufferPointer(start: p, count: count))
    }

    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        guard let p = pointer else { preconditionFailure("SecureBytes used after wipe") }
        return try body(UnsafeMutableRawBufferPointer(start: p, count: count))
    }

    /// Constant-time comparison (`sodium_memcmp`).
    public func constantTimeEquals(_ other: SecureBytes) -> Bool {
        guard count == other.count else { return false }
        if count == 0 { return true }
        return withUnsafeBytes { a in
            other.withUnsafeBytes { b in sodium_memcmp(a.baseAddress!, b.baseAddress!, count) == 0 }
        }
    }

    /// A new guarded buffer holding a range of these bytes. - Throws: `CryptoError.allocationFailed`.
    public func slice(_ range: Range<Int>) throws -> SecureBytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= count)
        return try withUnsafeBytes { try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[range])) }
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible {
    // Never print the contents.
    public var description: String { "SecureBytes(\(count) bytes)" }
    public var debugDescription: String { description }
}

/// Wipes memory that is not ours to free (a library's receive buffer) with `sodium_memzero`.
public func wipeMemory(_ buffer: UnsafeMutableRawBufferPointer) {
    Sodium.ensure()
    if let base = buffer.baseAddress, buffer.count > 0 { sodium_memzero(base, buffer.count) }
}

/// Wipes an ordinary byte array in place; for transient copies that cannot be avoided.
public func wipeBytes(_ bytes: inout [UInt8]) {
    Sodium.ensure()
    bytes.withUnsafeMutableBytes { buf in
        if let base = buf.baseAddress { sodium_memzero(base, buf.count) }
    }
}
