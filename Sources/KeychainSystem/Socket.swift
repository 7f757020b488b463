import CProcess
import Glibc

/// The kernel's view of a connected Unix-socket peer (`SO_PEERCRED`): who connected, as the
/// kernel recorded it at connect time.
public struct PeerCredentials: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// Unix-domain stream sockets: making, binding, connecting, peer credentials, and bytes with a
/// descriptor attached (`SCM_RIGHTS`).
extension FileDescriptor {
    /// A new Unix-domain stream socket, close-on-exec (socket(2)).
    public static func unixStreamSocket() throws(Errno) -> FileDescriptor {
        FileDescriptor(rawValue: try systemCall {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        })
    }

    /// Two connected Unix-domain stream sockets, close-on-exec (socketpair(2)).
    public static func unixStreamPair() throws(Errno) -> (FileDescriptor, FileDescriptor) {
        var pair: [Int32] = [-1, -1]
        _ = try systemCall { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) }
        return (FileDescriptor(rawValue: pair[0]), FileDescriptor(rawValue: pair[1]))
    }

    /// Binds the socket to a path (bind(2)). - Throws: `.nameTooLong` for a path that does not
    /// fit `sun_path`, `.fileExists` when something is there.
    public func bind(unixPath path: String) throws(Errno) {
        var (addr, len) = try Self.address(path)
        _ = try systemCall {
            withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(rawValue, $0, len) } }
        }
    }

    /// Starts accepting connections (listen(2)).
    public func listen(backlog: Int32) throws(Errno) {
        _ = try systemCall { Glibc.listen(rawValue, backlog) }
    }

    /// Takes the next connection of a listening socket (accept4(2)), close-on-exec, blocking.
    public func accept() throws(Errno) -> FileDescriptor {
        FileDescriptor(rawValue: try systemCall { kcfs_accept_cloexec(rawValue) })
    }

    /// Connects to the socket at `path` (connect(2)). An interrupted connect of a Unix socket
    /// leaves it unconnected, so it is repeated. - Throws: `.noSuchFile` when nothing is there,
    /// `.connectionRefused` when nothing listens, `.nameTooLong`.
    public func connect(unixPath path: String) throws(Errno) {
        var (addr, len) = try Self.address(path)
        _ = try systemCall {
            withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(rawValue, $0, len) } }
        }
    }

    /// The connected peer's pid, uid and gid (getsockopt(2) `SO_PEERCRED`).
    public func peerCredentials() throws(Errno) -> PeerCredentials {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }: Glibc hides it behind _GNU_SOURCE,
        // and a tuple has the same C layout.
        var cred: (Int32, UInt32, UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        _ = try systemCall { getsockopt(rawValue, SOL_SOCKET, SO_PEERCRED, &cred, &len) }
        return PeerCredentials(pid: cred.0, uid: cred.1, gid: cred.2)
    }

    /// The executable of the connected peer whose pid is `pid` (from `peerCredentials`), read
    /// while a pidfd (`SO_PEERPIDFD`) proves the pid still names the process that connected;
    /// nil when that process is gone or the kernel gives no pidfd.
    public func peerExecutable(pid: Int32) -> String? {
        let pidfd = kcfs_peer_pidfd(rawValue)
        guard pidfd >= 0 else { return nil }
        defer { Glibc.close(pidfd) }
        guard pid > 0, let path = ProcessFiles.executable(of: pid) else { return nil }
        // Read first, checked after: a pid can be reused only once its process has been reaped.
        return kcfs_pidfd_alive(pidfd) == 1 ? path : nil
    }

    /// One send(2) with `MSG_NOSIGNAL` (a peer that went away is `.brokenPipe`, not a signal
    /// that kills the process); returns the bytes taken.
    public func send(_ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        try systemCall { Glibc.send(rawValue, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends every byte of `bytes` with `send`. - Throws: `.ioError` when a send takes nothing.
    public func sendAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < bytes.count {
            let n = try send(UnsafeRawBufferPointer(rebasing: bytes[done...]))
            guard n > 0 else { throw Errno.ioError }  // nothing taken: it would never finish
            done += n
        }
    }

    /// One sendmsg(2) of `first` then `second` (`MSG_NOSIGNAL`): one system call for a header
    /// and its body. Returns the bytes taken, which may be fewer than both.
    public func send(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) throws(Errno) -> Int {
        var parts = [iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
                     iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count)]
        return try parts.withUnsafeMutableBufferPointer { iov in
            var message = msghdr()
            message.msg_iov = iov.baseAddress
            message.msg_iovlen = second.count > 0 ? 2 : 1
            return Result { () throws(Errno) in try systemCall { sendmsg(rawValue, &message, Int32(MSG_NOSIGNAL)) } }
        }.get()
    }

    /// One sendmsg(2) of `bytes` with `descriptor` attached (`SCM_RIGHTS`); the descriptor
    /// stays open here. Returns the bytes taken.
    public func send(_ bytes: UnsafeRawBufferPointer, passing descriptor: FileDescriptor) throws(Errno) -> Int {
        try systemCall { kcfs_send_with_fd(rawValue, bytes.baseAddress, bytes.count, descriptor.rawValue) }
    }

    /// One recvmsg(2) into `buffer` with room for one passed descriptor, received
    /// close-on-exec (the kernel drops any further ones). Returns the bytes read (0 at the end
    /// of the stream) and the descriptor, which the caller then owns.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> (count: Int, descriptor: FileDescriptor?) {
        var fd: Int32 = -1, truncated: Int32 = 0
        let n = try systemCall { kcfs_recv_with_fd(rawValue, buffer.baseAddress, buffer.count, 0, &fd, &truncated) }
        return (n, fd >= 0 ? FileDescriptor(rawValue: fd) : nil)
    }

    /// Whether peers may pass descriptors to this socket (SO_PASSRIGHTS): refused, a sender's
    /// sendmsg with SCM_RIGHTS fails with EPERM and nothing reaches this process. Sockets
    /// accepted from a listener take its setting. Throws `Errno` (ENOPROTOOPT before Linux 6.16).
    public func setAcceptsDescriptors(_ accepts: Bool) throws(Errno) {
        _ = try systemCall { kcfs_set_pass_rights(rawValue, accepts ? 1 : 0) }
    }

    /// True when this is the FUSE device (/dev/fuse, character device 10,229); asks only the
    /// kernel's cache, so a descriptor of a FUSE file never waits for its file system.
    public var isFuseDevice: Bool { kcfs_is_fuse_device(rawValue) == 1 }

    /// True when `path` fits a socket address (`sun_path`, 107 bytes and the terminating 0).
    public static func fitsUnixAddress(_ path: String) -> Bool {
        path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path)
    }

    /// A `sockaddr_un` for `path` and its length.
    private static func address(_ path: String) throws(Errno) -> (sockaddr_un, socklen_t) {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard fitsUnixAddress(path) else { throw Errno.nameTooLong }
        withUnsafeMutableBytes(of: &addr.sun_path) { dst in
            for (i, b) in bytes.enumerated() { dst[i] = b }
            dst[bytes.count] = 0
        }
        return (addr, socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1))
    }
}
