import CSodium

/// BLAKE2b (`crypto_generichash`), keyed or not. Used for blind index tokens and key derivation.
public enum KeyedHash {
    /// Hashes `message` with an optional key to `length` bytes (16...64).
    public static func hash(_ message: [UInt8], key: SecureBytes?, length: Int = 32) -> [UInt8] {
        message.withUnsafeBytes { hash($0, key: key, length: length) }
    }

    public static func hash(_ message: UnsafeRawBufferPointer, key: SecureBytes?, length: Int = 32) -> [UInt8] {
        Sodium.ensure()
        precondition(length >= Int(crypto_generichash_BYTES_MIN) && length <= Int(crypto_generichash_BYTES_MAX))
        var out = [UInt8](repeating: 0, count: length)
        let run: (UnsafePointer<UInt8>?, Int) -> Int32 = { k, klen in
            out.withUnsafeMutableBufferPointer { o in
                crypto_generichash(o.baseAddress!, length,
                                   message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
                                   k, klen)
            }
        }
        let rc: Int32
        if let key {
            rc = key.withUnsafeBytes { run($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) }
        } else {
            rc = run(nil, 0)
        }
        precondition(rc == 0)
        return out
    }

    /// Replaces `chain` (32 bytes) with the keyed BLAKE2b-256 of `chain` followed by `message`,
    /// the step of a hash chain, without building the concatenation.
    public static func extend(_ chain: inout [UInt8], with message: UnsafeRawBufferPointer, key: SecureBytes) {
        precondition(chain.count == 32)
        chain.withUnsafeMutableBytes { c in
            hash(key: key, into: c) { input in
                input.append(UnsafeRawBufferPointer(c))
                input.append(message)
            }
        }
    }

    /// The pieces of one keyed BLAKE2b message, appended in order. They gather in a buffer on
    /// the stack and reach `crypto_generichash_update` in as few calls as fit; valid only inside
    /// the closure of `hash(key:into:_:)`.
    public struct Input {
        fileprivate let state: OpaquePointer
        fileprivate let buffer: UnsafeMutableRawBufferPointer
        fileprivate let used: UnsafeMutablePointer<Int>

        public func append(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            if used.pointee + bytes.count > buffer.count {
                flush()
                if bytes.count > buffer.count {
                    _ = crypto_generichash_update(state, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
                    return
                }
            }
            (buffer.baseAddress! + used.pointee).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            used.pointee += bytes.count
        }

        public func append(_ byte: UInt8) {
            withUnsafeBytes(of: byte) { append($0) }
        }

        /// The UTF-8 bytes of a string, with no length and no terminator.
        public func append(_ string: String) {
            var s = string
            s.withUTF8 { append(UnsafeRawBufferPointer($0)) }
        }

        public func append(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { append($0) }
        }

        public func appendBigEndian(_ value: UInt32) {
            withUnsafeBytes(of: value.bigEndian) { append($0) }
        }

        public func appendBigEndian(_ value: UInt64) {
            withUnsafeBytes(of: value.bigEndian) { append($0) }
        }

        fileprivate func flush() {
            guard used.pointee > 0 else { return }
            _ = crypto_generichash_update(state, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(used.pointee))
            used.pointee = 0
        }
    }

    /// Keyed BLAKE2b of the bytes `feed` appends, written to `out` (16...64 bytes): the same
    /// bytes as `hash` of their concatenation. The state (`crypto_generichash_init` ...
    /// `_final`) and the buffer of pieces live on the stack and are zeroed after: the one held
    /// the key, the other what was hashed.
    public static func hash(key: SecureBytes, into out: UnsafeMutableRawBufferPointer, _ feed: (Input) -> Void) {
        Sodium.ensure()
        precondition(out.count >= Int(crypto_generichash_BYTES_MIN) && out.count <= Int(crypto_generichash_BYTES_MAX))
        let stateSize = crypto_generichash_statebytes()
        let bufferSize = 256
        // The state type is 64-byte aligned in C, so Swift sees it as opaque: allocate it by size.
        // Swift keeps a temporary allocation on the stack only up to 16-byte alignment (beyond,
        // it calls memalign), so the state is aligned by hand inside a larger one.
        withUnsafeTemporaryAllocation(byteCount: stateSize + bufferSize + 64, alignment: 16) { whole in
            defer { sodium_memzero(whole.baseAddress!, whole.count) }
            let skip = (64 - Int(bitPattern: whole.baseAddress!) % 64) % 64
            let raw = UnsafeMutableRawBufferPointer(rebasing: whole[skip..<(skip + stateSize + bufferSize)])
            let state = OpaquePointer(raw.baseAddress!)
            var used = 0
            var rc = key.withUnsafeBytes { k in
                crypto_generichash_init(state, k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count, out.count)
            }
            withUnsafeMutablePointer(to: &used) { used in
                let input = Input(state: state, buffer: UnsafeMutableRawBufferPointer(rebasing: raw[stateSize...]), used: used)
                feed(input)
                input.flush()
            }
            rc |= crypto_generichash_final(state, out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count)
            precondition(rc == 0)
        }
    }

    /// `hash(key:into:_:)` into a new array of `length` bytes.
    public static func hash(key: SecureBytes, length: Int, _ feed: (Input) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            hash(key: key, into: UnsafeMutableRawBufferPointer(buffer), feed)
            count = length
        }
    }

    /// Derives a 32-byte guarded key from `key` and a context label; a keyed BLAKE2b whose output
    /// never leaves guarded memory. - Throws: `CryptoError.allocationFailed`.
    public static func deriveKey(from key: SecureBytes, context: [UInt8]) throws -> SecureBytes {
        Sodium.ensure()
        let out = try SecureBytes(count: 32)
        let rc = out.withUnsafeMutableBytes { o in
            key.withUnsafeBytes { k in
                context.withUnsafeBufferPointer { c in
                    crypto_generichash(o.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                                       c.baseAddress, UInt64(c.count),
                                       k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                }
            }
        }
        precondition(rc == 0)
        return out
    }
}
