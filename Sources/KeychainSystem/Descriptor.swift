import Glibc

/// Whole-buffer reads and writes on a descriptor, with interrupted calls repeated.
public enum Descriptor {
    /// Writes every byte of `bytes`. Sockets are written with `send(MSG_NOSIGNAL)`, so a peer
    /// that went away is an `EPIPE` error, not a signal that kills the process.
    public static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, socket: Bool = false) throws(Errno) {
        var done = 0
        while done < bytes.count {
            let start = bytes.baseAddress! + done, left = bytes.count - done
            let n = try systemCall { socket ? send(fd, start, left, Int32(MSG_NOSIGNAL)) : write(fd, start, left) }
            guard n > 0 else { throw Errno.ioError }  // nothing taken: it would never finish
            done += n
        }
    }

    /// Reads until `buffer` is full or the stream ends; returns how many bytes arrived.
    public static func readAll(into buffer: UnsafeMutableRawBufferPointer, from fd: Int32, socket: Bool = false) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let start = buffer.baseAddress! + done, left = buffer.count - done
            let n = try systemCall { socket ? recv(fd, start, left, 0) : read(fd, start, left) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// One read of at most `buffer.count` bytes: 0 at the end of the stream.
    public static func readSome(into buffer: UnsafeMutableRawBufferPointer, from fd: Int32, socket: Bool = false) throws(Errno) -> Int {
        try systemCall { socket ? recv(fd, buffer.baseAddress, buffer.count, 0) : read(fd, buffer.baseAddress, buffer.count) }
    }
}
