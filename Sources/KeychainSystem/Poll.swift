import Glibc

extension FileDescriptor {
    /// Waits until the descriptor has something to read or `timeoutMilliseconds` pass
    /// (poll(2), `POLLIN`). Returns false when the time ran out. An interrupted wait starts over.
    public func waitUntilReadable(timeoutMilliseconds: Int32) throws(Errno) -> Bool {
        var entry = pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
        return try systemCall { poll(&entry, 1, timeoutMilliseconds) } > 0
    }
}

/// Waiting on several descriptors at once.
public enum Poll {
    /// Waits until one of `descriptors` (negative ones are left out) has something to read, or
    /// `timeoutMilliseconds` pass; an interrupted wait returns early, as a timeout does.
    public static func waitUntilAnyReadable(_ descriptors: [Int32], timeoutMilliseconds: Int32) {
        var set = descriptors.filter { $0 >= 0 }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        _ = poll(&set, nfds_t(set.count), timeoutMilliseconds)
    }
}
