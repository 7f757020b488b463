import KeychainModel
import KeychainCrypto
import KeychainSystem

/// Length-prefixed frames on a stream socket. Payloads are read straight into guarded memory.
public enum Frame {
    /// The largest secret an item may hold, with its attributes: every stored item fits a frame.
    public static let maximumLength = ItemLimits.maximumSecretLength + ItemLimits.frameOverhead

    /// Writes one frame. - Throws: `KeychainStatus.io` when the peer is gone.
    public static func write(_ payload: SecureBytes, to fd: Int32) throws {
        try payload.withUnsafeBytes { try write(bytes: $0, to: fd) }
    }

    /// Writes one frame of a payload that holds no secret (a `lookup`'s, made on the stack).
    /// - Throws: `KeychainStatus.io` when the peer is gone.
    public static func write(bytes payload: UnsafeRawBufferPointer, to fd: Int32) throws {
        var header = UInt32(payload.count).bigEndian
        try withUnsafeBytes(of: &header) { head in
            // Header and payload in one sendmsg: one system call and one wake-up of the reader.
            let sent: Int
            do { sent = try FileDescriptor(rawValue: fd).send(head, payload) } catch { throw KeychainStatus.io }
            // A short send (a full socket buffer) finishes with plain sends.
            let headerLeft = max(0, 4 - sent)
            if headerLeft > 0 { try writeAll(UnsafeRawBufferPointer(rebasing: head[(4 - headerLeft)...]), fd) }
            let bodySent = max(0, sent - 4)
            if bodySent < payload.count { try writeAll(UnsafeRawBufferPointer(rebasing: payload[bodySent...]), fd) }
        }
    }

    /// The 4-byte length header of a payload, for a writer that sends it itself (with a
    /// descriptor attached) and then the body with `writeBody`.
    public static func header(for payload: SecureBytes) -> [UInt8] {
        var header = ByteWriter()
        header.u32(UInt32(payload.count))
        return header.bytes
    }

    /// Writes a payload's bytes after its header was sent. - Throws: `KeychainStatus.io`.
    public static func writeBody(_ payload: SecureBytes, to fd: Int32) throws {
        try payload.withUnsafeBytes { try writeAll($0, fd) }
    }

    /// Reads one frame; nil at a clean end of stream.
    /// - Throws: `KeychainStatus.io` on a short read, `.decode` for an over-long frame,
    ///   `.allocate` when no guarded memory is left for it.
    public static func read(from fd: Int32) throws -> SecureBytes? {
        var header = [UInt8](repeating: 0, count: 4)
        let got = try header.withUnsafeMutableBytes { try readAll($0, fd) }
        if got == 0 { return nil }
        guard got == 4 else { throw KeychainStatus.io }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length <= maximumLength else { throw KeychainStatus.decode }
        return try readPayload(length: length, from: fd, prefix: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// Reads a payload of `length` bytes whose first bytes (`prefix`) have already arrived.
    /// The buffer grows with the bytes that arrive, never ahead of them: a peer that announces
    /// the largest frame and sends nothing costs one small buffer, not 17 MiB of locked memory.
    static func readPayload(length: Int, from fd: Int32, prefix: UnsafeRawBufferPointer) throws -> SecureBytes {
        var payload = try mapAllocationFailure { try SecureBytes(count: min(length, max(initialCapacity, prefix.count))) }
        if prefix.count > 0 {
            payload.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: prefix.baseAddress!, byteCount: prefix.count) }
        }
        var filled = prefix.count
        filled += try payload.withUnsafeMutableBytes { try readAll(UnsafeMutableRawBufferPointer(rebasing: $0[filled...]), fd) }
        while filled < length {
            guard filled == payload.count else { throw KeychainStatus.io }
            let bigger = try mapAllocationFailure { try SecureBytes(count: min(length, payload.count * 4)) }
            payload.withUnsafeBytes { src in
                bigger.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: src.count) }
            }
            payload.wipe()
            payload = bigger
            filled += try payload.withUnsafeMutableBytes { try readAll(UnsafeMutableRawBufferPointer(rebasing: $0[filled...]), fd) }
        }
        return payload
    }

    /// What a frame's buffer starts at; requests and replies are mostly far smaller.
    public static let initialCapacity = 64 << 10

    private static func writeAll(_ buf: UnsafeRawBufferPointer, _ fd: Int32) throws {
        do { try Descriptor.writeAll(buf, to: fd, socket: true) } catch { throw KeychainStatus.io }
    }

    /// Reads until the buffer is full or the stream ends; returns the bytes read.
    static func readAll(_ buf: UnsafeMutableRawBufferPointer, _ fd: Int32) throws -> Int {
        do { return try Descriptor.readAll(into: buf, from: fd, socket: true) } catch { throw KeychainStatus.io }
    }
}

/// Reads frames from one socket through a small guarded buffer: a whole small frame (most
/// replies) costs one `recv` instead of one for the header and one for the payload. Bytes past
/// a frame wait in the buffer for the next `read`. Used by one thread at a time.
public final class FrameReader {
    private let fd: Int32
    /// A pool slot (`SecurePool`): small, guarded, no mapping of its own.
    private let buffer: SecureBytes
    private var start = 0
    private var end = 0

    /// - Throws: `KeychainStatus.allocate` without guarded memory for its buffer.
    public init(fd: Int32) throws {
        self.fd = fd
        buffer = try mapAllocationFailure { try SecureBytes(count: 512) }
    }

    deinit { buffer.wipe() }

    /// Whether bytes received from the socket wait here for a `read` (the next frame, or part of it).
    public var hasBufferedBytes: Bool { end > start }

    /// Reads one frame; nil at a clean end of stream.
    /// - Throws: `KeychainStatus.io` on a short read, `.decode` for an over-long frame.
    public func read() throws -> SecureBytes? {
        while end - start < 4 {
            if try fill() == 0 {
                if end == start { return nil }
                throw KeychainStatus.io
            }
        }
        let length = buffer.withUnsafeBytes { b in (0..<4).reduce(0) { $0 << 8 | Int(b[start + $1]) } }
        guard length <= Frame.maximumLength else { throw KeychainStatus.decode }
        consume(4)
        if length <= buffer.count {
            while end - start < length {
                if try fill() == 0 { throw KeychainStatus.io }
            }
            let payload = try buffer.withUnsafeBytes { b in
                try mapAllocationFailure { try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: b[start..<start + length])) }
            }
            consume(length)
            return payload
        }
        // A large frame: what arrived goes first, the rest straight into the frame's buffer.
        let have = end - start
        let payload = try buffer.withUnsafeBytes {
            try Frame.readPayload(length: length, from: fd, prefix: UnsafeRawBufferPointer(rebasing: $0[start..<end]))
        }
        consume(have)
        return payload
    }

    /// Receives what the socket has into the free end of the buffer, moving unread bytes to
    /// the front first (so a frame that fits the buffer always has room); returns the bytes
    /// received (0 at the end of the stream).
    private func fill() throws -> Int {
        if start > 0 {
            let unread = end - start
            buffer.withUnsafeMutableBytes { b in
                if unread > 0 { b.baseAddress!.copyMemory(from: b.baseAddress! + start, byteCount: unread) }
                wipeMemory(UnsafeMutableRawBufferPointer(rebasing: b[unread..<end]))
            }
            start = 0
            end = unread
        }
        let n: Int
        do {
            n = try buffer.withUnsafeMutableBytes { (b) throws(Errno) in
                try FileDescriptor(rawValue: fd).read(into: UnsafeMutableRawBufferPointer(rebasing: b[end...]))
            }
        } catch {
            throw KeychainStatus.io
        }
        end += n
        return n
    }

    /// Drops `n` bytes from the front, wiping them.
    private func consume(_ n: Int) {
        buffer.withUnsafeMutableBytes { wipeMemory(UnsafeMutableRawBufferPointer(rebasing: $0[start..<start + n])) }
        start += n
        if start == end { start = 0; end = 0 }
    }
}
