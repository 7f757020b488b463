import Glibc
import KeychainProtocol

// `keychainfs-bench idle`: the idle half of bench/run.sh's load test (PRODUCT 11): many
// connections that cost the daemon a descriptor each and ask nothing.

let idleUsage = """
    usage: keychainfs-bench idle --vault PATH [--connections N] [--seconds T] [--partial]

    Opens N connections (default 1000) to the vault's running daemon and holds them for T
    seconds (default 3). With --partial each one sends the first byte of a frame's header and
    nothing more (a frame the daemon must wait for). Prints how many were opened and how many
    the daemon had closed by the end (a partial frame older than the daemon's frame deadline
    is cut).
    """

func idleMode(_ args: [String]) {
    let o = parseModeOptions(args, usage: idleUsage)
    guard let path = o.vault else { fail("idle needs --vault\n\n" + idleUsage) }
    let socket = Paths.socket(forVault: Paths.canonical(path))
    raiseDescriptorLimit(to: o.connections + 64)
    var fds: [Int32] = []
    fds.reserveCapacity(o.connections)
    defer { for fd in fds { close(fd) } }
    for _ in 0..<o.connections {
        guard let fd = try? UnixSocket.connect(to: socket) else {
            fail("connect \(fds.count + 1) of \(o.connections) failed: errno \(errno)")
        }
        fds.append(fd)
        if o.partial {
            var byte: UInt8 = 0
            guard send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 else { fail("send on connection \(fds.count) failed") }
        }
    }
    emit("idle: \(fds.count) connections open\(o.partial ? ", each with one byte of a frame" : "")", fd: 2)
    let until = monotonic() + o.seconds
    while monotonic() < until { usleep(20_000) }
    // A connection the daemon closed reads as the end of the stream (or an error) now.
    var pfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    let ready = poll(&pfds, nfds_t(pfds.count), 0)
    let closed = ready > 0 ? pfds.filter { $0.revents != 0 }.count : 0
    emit("connections=\(fds.count) seconds=\(plain(o.seconds, 1)) partial=\(o.partial ? 1 : 0) closed_by_daemon=\(closed)")
}

/// Lets this process hold `wanted` descriptors when the hard limit allows it.
func raiseDescriptorLimit(to wanted: Int) {
    var rl = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl) == 0, rl.rlim_cur < rlim_t(wanted) else { return }
    rl.rlim_cur = min(rl.rlim_max, rlim_t(wanted))
    _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl)
}
