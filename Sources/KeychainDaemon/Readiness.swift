import Glibc
import Synchronization

/// Tells systemd the daemon is ready (`Type=notify`): sends `READY=1` to `$NOTIFY_SOCKET`, a
/// datagram socket path, or an abstract one when it starts with `@`. Nothing without systemd.
func notifyReady() {
    StartReport.listening()
    guard let path = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !path.isEmpty else { return }
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    var bytes = Array(path.utf8)
    if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
    guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return }
    withUnsafeMutableBytes(of: &addr.sun_path) { for (i, b) in bytes.enumerated() { $0[i] = b } }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
    let message = Array("READY=1".utf8)
    _ = withUnsafePointer(to: &addr) { a in
        a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
            message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sa, length) }
        }
    }
}

/// How a daemon that `keychainfs` started tells it why it did not start (DaemonClient.connect):
/// the starter passes a pipe's write end and names its descriptor in `KEYCHAINFS_START_FD`; a
/// daemon that exits before it listens writes its exit status there (one byte), and one that
/// listens closes it. The starter's wait status would tell too, unless the starter ignores
/// SIGCHLD (inherited from its own parent): its children are then reaped unseen.
enum StartReport {
    private static let descriptor = Atomic<Int32>(-1)

    /// Takes the descriptor the environment names, if it is a pipe: close-on-exec, and the
    /// variable removed, so nothing the daemon starts inherits either.
    static func adopt() {
        guard let value = getenv("KEYCHAINFS_START_FD").map({ String(cString: $0) }) else { return }
        unsetenv("KEYCHAINFS_START_FD")
        var st = stat()
        guard let fd = Int32(value), fd > 2, fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFIFO,
              fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 else { return }
        descriptor.store(fd, ordering: .relaxed)
    }

    /// The daemon listens: the starter connects now, and learns nothing more here.
    static func listening() {
        let fd = descriptor.exchange(-1, ordering: .relaxed)
        if fd >= 0 { close(fd) }
    }

    /// The daemon exits with `status`; written only if it never listened.
    static func exiting(_ status: Int32) {
        let fd = descriptor.exchange(-1, ordering: .relaxed)
        guard fd >= 0 else { return }
        var byte = UInt8(truncatingIfNeeded: status)
        signal(SIGPIPE, SIG_IGN)  // a starter that gave up: the status goes nowhere, and the exit stays
        _ = write(fd, &byte, 1)
        close(fd)
    }
}
