import Foundation
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// A real daemon (vault, handlers, connection server) in the test process, reached over
/// socketpairs whose far end the server adopts with an identity chosen by the test.
final class InProcessDaemon {
    let dir: String
    let vaultPath: String
    let daemon: Daemon
    let server: ConnectionServer
    static let passphrase = "in-process pass"

    /// The vault's owner (this process's uid), and a local user with no group.
    static let owner = CallerIdentity(pid: getpid(), uid: geteuid(), gid: getegid(), groups: [getegid()],
                                      executable: "/usr/bin/owner-tool")
    static let outsider = CallerIdentity(pid: getpid(), uid: 54_321, gid: 54_321, groups: [54_321], executable: nil)

    init(limits adjust: (inout ServerLimits) -> Void = { _ in }) throws {
        dir = NSTemporaryDirectory() + "kcfs-daemon-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        vaultPath = dir + "/test.vault"
        let device = try DeviceKey.loadOrCreate(at: dir + "/device.key")
        let vault = try Vault.create(at: vaultPath, passphrase: SecureBytes(copying: Array(Self.passphrase.utf8)),
                                     kdf: .minimum, deviceKey: device)
        daemon = try Daemon(vault: vault, vaultPath: vaultPath, lockoutPath: dir + "/lockout") { _ in }
        var limits = ServerLimits(ownerUID: geteuid())
        adjust(&limits)
        let listener = try UnixSocket.listen(at: dir + "/daemon.sock", mode: 0o600)
        server = try ConnectionServer(listener: listener, handler: daemon, limits: limits)
        try server.start()
    }

    func stop() {
        server.stop()
        daemon.vault.lock()
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A connected client socket whose peer the server knows as `caller`.
    func connect(as caller: CallerIdentity) throws -> Int32 {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw KeychainStatus.io
        }
        guard server.adopt(fd: fds[1], caller: caller) else {
            close(fds[0])
            throw KeychainStatus.allocate
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fds[0]
    }

    /// One request and its response on a fresh connection.
    func call(_ request: Request, as caller: CallerIdentity = owner) throws -> Response {
        let fd = try connect(as: caller)
        defer { close(fd) }
        return try call(request, on: fd)
    }

    func call(_ request: Request, on fd: Int32) throws -> Response {
        try Frame.write(request.encoded(), to: fd)
        guard let frame = try Frame.read(from: fd) else { throw KeychainStatus.io }
        return try Response.decode(frame)
    }

    func addPassword(service: String, account: String, secret: String) throws {
        let r = try call(Request(.add, query: ["class": "genp", "svce": .string(service), "acct": .string(account)],
                                 secrets: [SecureBytes(copying: Array(secret.utf8))]))
        XCTAssertEqual(r.status, .success)
    }

    func readPassword(service: String, account: String, as caller: CallerIdentity = owner) throws -> Response {
        try call(Request(.copyMatching, query: ["class": "genp", "svce": .string(service), "acct": .string(account),
                                                "r_Data": true]), as: caller)
    }
}

func secretText(_ r: Response) -> String? {
    guard case .value(.data(let d)) = r.result else { return nil }
    return d.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}

/// Threads of this process (each a /proc/self/task entry).
func threadCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
}

/// True when the peer closed `fd` within `seconds` (a read returns 0 or a reset).
func closedByPeer(_ fd: Int32, within seconds: Double) -> Bool {
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if poll(&pfd, 1, 100) > 0 {
            var byte: UInt8 = 0
            let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
            if n == 0 || (n < 0 && errno != EAGAIN) { return true }
        }
    }
    return false
}
