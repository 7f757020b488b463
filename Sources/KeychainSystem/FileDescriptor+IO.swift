import Glibc

extension FileDescriptor {
    /// One read(2) of at most `buffer.count` bytes; 0 at the end of the stream.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try systemCall { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// One pread(2) at `offset`, which leaves the file position alone.
    public func read(fromAbsoluteOffset offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try systemCall { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Reads until `buffer` is full or the stream ends; returns how many bytes arrived.
    public func readAll(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads to the end of the stream, at most `limit` bytes (files in /proc have no size to ask).
    public func readToEnd(limit: Int) throws(Errno) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while out.count < limit {
            // withUnsafeMutableBytes rethrows untyped: the Errno comes out through a Result.
            let n = try chunk.withUnsafeMutableBytes { b in Result { () throws(Errno) in try read(into: b) } }.get()
            if n == 0 { break }
            out += chunk[0..<min(n, limit - out.count)]
        }
        return out
    }

    /// One write(2) of at most `bytes.count` bytes; returns how many it took, which may be fewer.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        try systemCall { Glibc.write(rawValue, bytes.baseAddress, bytes.count) }
    }

    /// Writes every byte of `bytes` (write(2)). - Throws: `.ioError` when a write takes nothing.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < bytes.count {
            let n = try write(UnsafeRawBufferPointer(rebasing: bytes[done...]))
            guard n > 0 else { throw Errno.ioError }  // nothing taken: it would never finish
            done += n
        }
    }

    /// Cuts the file to `length` bytes, or extends it with zeros (ftruncate(2)).
    public func truncate(toLength length: Int64) throws(Errno) {
        _ = try systemCall { ftruncate(rawValue, off_t(length)) }
    }

    /// Where `seek` counts from.
    public enum SeekOrigin: Sendable {
        case start, current, end
    }

    /// Moves the file position (lseek(2)); returns it, from the start of the file.
    @discardableResult
    public func seek(offset: Int64, from origin: SeekOrigin) throws(Errno) -> Int64 {
        let whence = switch origin { case .start: SEEK_SET; case .current: SEEK_CUR; case .end: SEEK_END }
        return Int64(try systemCall { lseek(rawValue, off_t(offset), whence) })
    }

    /// Flushes the file's data and metadata to the device (fsync(2)).
    public func sync() throws(Errno) {
        _ = try systemCall { fsync(rawValue) }
    }

    /// The open file's status (fstat(2)).
    public func status() throws(Errno) -> FileStatus {
        var st = stat()
        _ = try systemCall { fstat(rawValue, &st) }
        return FileStatus(st)
    }

    /// Sets the file's owner and group (fchown(2)).
    public func setOwner(_ uid: UInt32, group gid: UInt32) throws(Errno) {
        _ = try systemCall { fchown(rawValue, uid, gid) }
    }

    /// Sets the file's permission bits (fchmod(2)).
    public func setPermissions(_ permissions: FilePermissions) throws(Errno) {
        _ = try systemCall { fchmod(rawValue, permissions.rawValue) }
    }

    /// Takes a shared advisory lock on the file without waiting (flock(2), `LOCK_NB`).
    /// Returns false when another holds an exclusive one.
    public func tryLockShared() throws(Errno) -> Bool {
        do { _ = try systemCall { flock(rawValue, LOCK_SH | LOCK_NB) } } catch let e where e == .wouldBlock { return false }
        return true
    }

    /// Takes an exclusive advisory lock on the file without waiting (flock(2), `LOCK_EX |
    /// LOCK_NB`). Returns false when another holds a lock on it.
    public func tryLockExclusive() throws(Errno) -> Bool {
        do { _ = try systemCall { flock(rawValue, LOCK_EX | LOCK_NB) } } catch let e where e == .wouldBlock { return false }
        return true
    }

    /// Releases this descriptor's advisory lock (flock(2), `LOCK_UN`).
    public func unlock() throws(Errno) {
        _ = try systemCall { flock(rawValue, LOCK_UN) }
    }
}
