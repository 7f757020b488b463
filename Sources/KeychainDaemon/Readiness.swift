import Glibc

/// Tells systemd the daemon is ready (`Type=notify`): sends `READY=1` to `$NOTIFY_SOCKET`, a
/// datagram socket path, or an abstract one when it starts with `@`. Nothing without systemd.
func notifyReady() {
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
