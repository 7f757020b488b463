import Glibc

extension FileDescriptor {
    /// Waits until the descriptor has something to read or `timeoutMilliseconds` pass
    /// (poll(2), `POLLIN`). Returns false when the time ran out. An interrupted wait starts over.
    public func waitUntilReadable(timeoutMilliseconds: Int32) throws(Errno) -> Bool {
        var entry = pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
        return try systemCall { poll(&entry, 1, timeoutMilliseconds) } > 0
    }
}
