import Foundation
import KeychainTestSupport
import XCTest

/// OpenSSH's own programs against `keychainfs ssh-agent`: keys made by ssh-keygen and imported
/// into the harness vault, agents started as `eval "$(keychainfs ssh-agent)"` would, and an sshd
/// of the test's own on 127.0.0.1. Everything started here is ended in `tearDown`.
class SSHAgentTestCase: HarnessTestCase {
    /// The keys every test imports: file name in the scratch directory, ssh-keygen arguments, label.
    static let keys: [(file: String, args: [String], label: String)] = [
        ("id_p256", ["-t", "ecdsa", "-b", "256"], "p256 key"),
        ("id_p384", ["-t", "ecdsa", "-b", "384"], "p384-key"),
        ("id_p521", ["-t", "ecdsa", "-b", "521"], "p521-key"),
        ("id_rsa", ["-t", "rsa", "-b", "2048"], "rsa-key"),
    ]

    /// Agents and sshds to end in `tearDown`.
    private var started: [pid_t] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ssh-add") else { throw XCTSkip("openssh-client is not installed") }
        for key in Self.keys {
            // PEM (SEC 1 / PKCS#1), the form `keychainfs import` reads.
            try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-m", "PEM", "-C", key.label, "-f", path(key.file)] + key.args)
            let imported = try h.run(["import", path(key.file), "-x", "-l", key.label])
            XCTAssertEqual(imported.status, 0, "\(imported)")
        }
    }

    override func tearDown() {
        stopStarted()
        super.tearDown()
    }

    /// Ends the agents and sshds this test started: SIGTERM, then SIGKILL after 2 s.
    func stopStarted() {
        for pid in started { kill(pid, SIGTERM) }
        for pid in started {
            var status: Int32 = 0
            for _ in 0..<100 where kill(pid, 0) == 0 {
                if waitpid(pid, &status, WNOHANG) == pid { break }
                usleep(20_000)
            }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
        started = []
    }

    /// Ends `pid` with the test.
    func track(_ pid: pid_t) { started.append(pid) }

    func path(_ name: String) -> String { h.dir + "/" + name }

    /// The key part (`TYPE BASE64`) and comment of a `.pub` file.
    func publicLine(_ file: String) throws -> String {
        try String(contentsOfFile: path(file + ".pub"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts an agent in the background (`keychainfs ssh-agent -a SOCKET`), as `prefix` (setpriv)
    /// when given, and returns the socket; the agent's pid is taken from the lines it prints.
    @discardableResult
    func startAgent(_ socket: String, prefix: [String] = [], options: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let r = try h.run(["ssh-agent", "-s", "-a", socket] + options + [h.vault], prefix: prefix, file: file, line: line)
        XCTAssertEqual(r.status, 0, "\(r)", file: file, line: line)
        guard let pidLine = r.stdout.split(separator: "\n").first(where: { $0.hasPrefix("SSH_AGENT_PID=") }),
              let pid = pid_t(pidLine.dropFirst("SSH_AGENT_PID=".count).prefix { $0.isNumber }) else {
            throw AttackStepFailed(description: "no SSH_AGENT_PID in \(r.stdout.debugDescription)")
        }
        started.append(pid)
        XCTAssertTrue(r.stdout.hasPrefix("SSH_AUTH_SOCK=\(socket); export SSH_AUTH_SOCK;\n"), r.stdout, file: file, line: line)
        return socket
    }

    /// A directory for an agent's socket, 0700 and owned by `uid`.
    func socketDirectory(_ name: String, owner uid: uid_t = 0, gid: gid_t = 0) throws -> String {
        let dir = path(name)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chown(dir, uid, gid)
        chmod(dir, 0o700)
        return dir
    }

    /// Runs an OpenSSH program with `SSH_AUTH_SOCK=socket`.
    func openSSH(_ argv: [String], socket: String, prefix: [String] = [], input: String = "",
                 extra: [String: String] = [:]) throws -> Spawn.Outcome {
        var env = h.environment.merging(extra) { _, b in b }
        env["SSH_AUTH_SOCK"] = socket
        return try Spawn.run(prefix + argv, environment: env, input: Data(input.utf8), timeout: 60)
    }

    func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    /// Runs a tool that must succeed.
    func tool(_ argv: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try Spawn.run(argv, environment: h.environment, input: Data(), timeout: 60)
        XCTAssertEqual(r.status, 0, "\(argv): \(text(r.err))", file: file, line: line)
    }

    /// sshd on 127.0.0.1 at a free port, with its own host key, `authorizedKeys` as root's
    /// authorized_keys file, no PAM and no passwords; returns the port.
    /// - Parameter hostKeyAgent: an agent socket holding the host key, whose public half is at
    ///   `hostKey` (sshd's `HostKeyAgent`); nil for a host key file of its own.
    func startSSHD(authorizedKeys: String, hostKey: String? = nil, hostKeyAgent: String? = nil) throws -> Int {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd") else { throw XCTSkip("openssh-server is not installed") }
        if hostKey == nil { try tool(["/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path("ssh_host_key")]) }
        try authorizedKeys.write(toFile: path("authorized_keys"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)  // privilege separation
        for _ in 0..<20 {
            let port = Int.random(in: 20_000..<60_000)
            let config = """
            ListenAddress 127.0.0.1:\(port)
            HostKey \(hostKey ?? path("ssh_host_key"))
            \(hostKeyAgent.map { "HostKeyAgent " + $0 } ?? "")
            AuthorizedKeysFile \(path("authorized_keys"))
            StrictModes no
            UsePAM no
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PermitRootLogin prohibit-password
            PidFile none

            """
            try config.write(toFile: path("sshd_config"), atomically: true, encoding: .utf8)
            var pid: pid_t = 0
            let argv = ["/usr/sbin/sshd", "-D", "-f", path("sshd_config"), "-E", path("sshd.log")]
            let cargv = argv.map { strdup($0) } + [nil]
            defer { for p in cargv { free(p) } }
            guard posix_spawn(&pid, argv[0], nil, nil, cargv, environ) == 0 else { throw AttackStepFailed(description: "cannot start sshd") }
            started.append(pid)
            if h.waitUntil(5, { Self.accepts(port) || waitpid(pid, nil, WNOHANG) == pid }), Self.accepts(port) { return port }
            kill(pid, SIGKILL)  // the port was taken: another one
        }
        throw AttackStepFailed(description: "sshd did not listen: \((try? String(contentsOfFile: path("sshd.log"), encoding: .utf8)) ?? "")")
    }

    /// sshd whose host key is the agent's key with public half `hostKey` (`HostKeyAgent`), and a
    /// strict login to it whose known_hosts holds `hostLine` (the key's `TYPE BASE64 ...`).
    func loginThroughHostKeyAgent(hostKey: String, hostLine: String, socket: String) throws -> Spawn.Outcome {
        let port = try startSSHD(authorizedKeys: try publicLine("id_p256") + "\n", hostKey: hostKey, hostKeyAgent: socket)
        let parts = hostLine.split(separator: " ")
        try "[127.0.0.1]:\(port) \(parts[0]) \(parts[1])\n".write(toFile: path("known_hosts"), atomically: true, encoding: .utf8)
        return try login(port: port, socket: socket, strict: true)
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// `ssh root@127.0.0.1 -p PORT echo logged-in` with only the agent's keys.
    /// - Parameter strict: the host key must already be in known_hosts.
    func login(port: Int, socket: String, strict: Bool = false) throws -> Spawn.Outcome {
        try openSSH(["/usr/bin/ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentityAgent=" + socket,
                     "-o", "IdentitiesOnly=no", "-o", "UserKnownHostsFile=" + path("known_hosts"),
                     "-o", "StrictHostKeyChecking=" + (strict ? "yes" : "accept-new"), "-o", "ConnectTimeout=10",
                     "-p", String(port), "root@127.0.0.1", "echo", "logged-in"], socket: socket)
    }
}

/// A client that speaks the agent protocol's bytes itself, to send what OpenSSH never would.
final class RawAgentClient {
    let fd: Int32

    init(_ socket: String) throws {
        fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            socket.utf8CString.withUnsafeBytes { path.copyMemory(from: $0) }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw AttackStepFailed(description: "cannot connect to \(socket): errno \(errno)")
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// `payload` with its length in front.
    func sendFrame(_ payload: [UInt8]) { send(Self.uint32(payload.count) + payload) }

    /// The next reply's payload; nil when the agent closed the connection (or said nothing in 10 s).
    func reply() -> [UInt8]? {
        guard let header = read(4) else { return nil }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        return read(length)
    }

    private func read(_ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + done, count - done, 0) }
            guard n > 0 else { return nil }
            done += n
        }
        return out
    }

    static func uint32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    static func string(_ bytes: [UInt8]) -> [UInt8] { uint32(bytes.count) + bytes }

    /// The key blobs of an identities answer (message 12, a count, then blob and comment pairs).
    static func blobs(_ answer: [UInt8]) -> [[UInt8]] {
        guard answer.first == 12, answer.count >= 5 else { return [] }
        let count = answer[1..<5].reduce(0) { $0 << 8 | Int($1) }
        var offset = 5
        func field() -> [UInt8] {
            let length = answer[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            defer { offset += 4 + length }
            return Array(answer[offset + 4..<offset + 4 + length])
        }
        return (0..<count).map { _ in
            let blob = field()
            _ = field()
            return blob
        }
    }
}
