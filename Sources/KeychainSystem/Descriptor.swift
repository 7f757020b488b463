/// Whole-buffer reads and writes on a descriptor given as an `Int32`, with interrupted calls
/// repeated: `FileDescriptor`'s calls for code that keeps bare descriptors.
public enum Descriptor {
    /// Writes every byte of `bytes`. Sockets are written with `send(MSG_NOSIGNAL)`, so a peer
    /// that went away is an `EPIPE` error, not a signal that kills the process.
    public static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, socket: Bool = false) throws(Errno) {
        let descriptor = FileDescriptor(rawValue: fd)
        if socket { try descriptor.sendAll(bytes) } else { try descriptor.writeAll(bytes) }
    }

    /// Reads until `buffer` is full or the stream ends; returns how many bytes arrived.
    /// `socket` changes nothing: read(2) on a stream socket is recv(2) without flags.
    public static func readAll(into buffer: UnsafeMutableRawBufferPointer, from fd: Int32, socket: Bool = false) throws(Errno) -> Int {
        try FileDescriptor(rawValue: fd).readAll(into: buffer)
    }

    /// One read of at most `buffer.count` bytes: 0 at the end of the stream.
    public static func readSome(into buffer: UnsafeMutableRawBufferPointer, from fd: Int32, socket: Bool = false) throws(Errno) -> Int {
        try FileDescriptor(rawValue: fd).read(into: buffer)
    }
}
