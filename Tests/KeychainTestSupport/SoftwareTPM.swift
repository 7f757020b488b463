import Foundation
import XCTest

/// A software TPM 2.0 (`swtpm socket`) on free loopback ports, with its state in a scratch
/// directory: one per "machine". `stop()` ends it and removes the directory; tests register it
/// as a teardown block so that happens when they fail too.
package final class SoftwareTPM {
    package let stateDir: String
    package let port: UInt16
    private var pid: pid_t = 0

    /// The TCTI the daemon and tpm2-tools reach it through (KEYCHAINFS_TCTI, TPM2TOOLS_TCTI).
    package var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    package init() throws {
        stateDir = NSTemporaryDirectory() + "kcfs-swtpm-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
        var started: (UInt16, pid_t)?
        // Two adjacent free ports (server, control); another process may take them between the
        // probe and swtpm's bind, so a start that does not answer is retried on other ports.
        for _ in 0..<5 where started == nil {
            guard let p = SoftwareTPM.freePortPair() else { continue }
            let child = try SoftwareTPM.spawn(["/usr/bin/swtpm", "socket", "--tpmstate", "dir=\(stateDir)", "--tpm2",
                                               "--server", "type=tcp,port=\(p),bindaddr=127.0.0.1",
                                               "--ctrl", "type=tcp,port=\(p + 1),bindaddr=127.0.0.1",
                                               "--flags", "not-need-init,startup-clear"])
            if SoftwareTPM.waitForListener(port: p, pid: child) { started = (p, child) } else {
                kill(child, SIGKILL)
                var status: Int32 = 0
                waitpid(child, &status, 0)
            }
        }
        guard let (p, child) = started else {
            try? FileManager.default.removeItem(atPath: stateDir)
            throw XCTSkip("swtpm did not start (is swtpm installed? scripts/setup.sh)")
        }
        port = p
        pid = child
    }

    /// One that the daemons a test class's harnesses start reach: its TCTI goes into this
    /// process's environment (`KEYCHAINFS_TCTI`), which each `CLIHarness` copies. Nil when swtpm
    /// does not start. End it with `stopForHarness` in the class tearDown.
    package static func forHarness() -> SoftwareTPM? {
        guard let tpm = try? SoftwareTPM() else { return nil }
        setenv("KEYCHAINFS_TCTI", tpm.tcti, 1)
        return tpm
    }

    /// Takes `KEYCHAINFS_TCTI` out of the environment, then stops.
    package func stopForHarness() {
        unsetenv("KEYCHAINFS_TCTI")
        stop()
    }

    /// Ends swtpm and removes its state.
    package func stop() {
        if pid > 0 {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            pid = 0
        }
        try? FileManager.default.removeItem(atPath: stateDir)
    }

    /// Extends a SHA-256 PCR with tpm2_pcrextend, as a firmware update changes PCR 7.
    package func extendPCR(_ index: Int) throws {
        let r = try Spawn.run(["/usr/bin/tpm2_pcrextend", "\(index):sha256=" + String(repeating: "ab", count: 32)],
                              environment: ["TPM2TOOLS_TCTI": tcti, "PATH": "/usr/bin:/bin"], input: Data(), timeout: 60)
        XCTAssertEqual(r.status, 0, "tpm2_pcrextend: \(String(decoding: r.err, as: UTF8.self))")
    }

    private static func spawn(_ argv: [String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        let cargv = argv.map { strdup($0) } + [nil]
        defer { for p in cargv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, nil, cargv, environ)
        guard rc == 0 else { throw Spawn.Failure(errno: rc, what: "posix_spawn \(argv[0])") }
        return pid
    }

    /// A port P such that P and P+1 were both free on 127.0.0.1 a moment ago.
    package static func freePortPair() -> UInt16? {
        for _ in 0..<20 {
            guard let p = bindProbe(0), p < 65535, bindProbe(p + 1) != nil else { continue }
            return p
        }
        return nil
    }

    /// Binds a TCP socket on 127.0.0.1:`port` (0: any) and returns the port it got, then closes it.
    private static func bindProbe(_ port: UInt16) -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { return nil }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return named == 0 ? UInt16(bigEndian: addr.sin_port) : nil
    }

    /// True once something accepts on 127.0.0.1:`port`; false when `pid` exited first.
    private static func waitForListener(port: UInt16, pid: pid_t) -> Bool {
        for _ in 0..<600 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return false }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            let ok = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
            close(fd)
            if ok { return true }
            usleep(20_000)
        }
        return false
    }
}
