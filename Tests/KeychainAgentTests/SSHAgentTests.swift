import Foundation
import KeychainTestSupport
import XCTest

/// `keychainfs ssh-agent` with OpenSSH's own ssh-add, ssh-keygen, ssh and sshd (issue 29).
final class SSHAgentTests: SSHAgentTestCase {
    func testSSHAddListsEveryVaultKeyByItsLabel() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        let listed = try openSSH(["/usr/bin/ssh-add", "-L"], socket: socket)
        XCTAssertEqual(listed.status, 0, text(listed.err))
        // ssh-keygen wrote each .pub with the label as its comment: the agent's lines are the same.
        let expected = try Self.keys.map { try publicLine($0.file) }
        XCTAssertEqual(text(listed.out).split(separator: "\n").map(String.init), expected)
        XCTAssertEqual(try h.run(["ssh-public-key", "p384-key", "-k", h.vault]).stdout, try publicLine("id_p384") + "\n")
        XCTAssertEqual(try h.run(["ssh-public-key", "nosuch", "-k", h.vault]).status, 44)

        // The socket is the user's alone, as ssh-agent makes it.
        var st = stat()
        XCTAssertEqual(stat(socket, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
    }

    func testSignaturesFromTheAgentVerifyWithSSHKeygen() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        try "a commit to sign\n".write(toFile: path("message"), atomically: true, encoding: .utf8)
        for key in Self.keys {
            // With only the .pub file at hand, ssh-keygen -Y sign asks the agent.
            try FileManager.default.removeItem(atPath: path(key.file))
            let signed = try openSSH(["/usr/bin/ssh-keygen", "-Y", "sign", "-f", path(key.file + ".pub"), "-n", "git", path("message")],
                                     socket: socket)
            XCTAssertEqual(signed.status, 0, "\(key.file): \(text(signed.err))")
            let parts = try publicLine(key.file).split(separator: " ")
            try "signer \(parts[0]) \(parts[1])\n".write(toFile: path("allowed"), atomically: true, encoding: .utf8)
            let verified = try openSSH(["/usr/bin/ssh-keygen", "-Y", "verify", "-f", path("allowed"), "-I", "signer", "-n", "git",
                                        "-s", path("message.sig")], socket: socket, input: "a commit to sign\n")
            XCTAssertEqual(verified.status, 0, "\(key.file): \(text(verified.out)) \(text(verified.err))")
            XCTAssertTrue(text(verified.out).hasPrefix("Good \"git\" signature for signer"), text(verified.out))
            try FileManager.default.removeItem(atPath: path("message.sig"))
        }
        // Each signature is the daemon's, audited with the key's label.
        let audit = try h.run(["audit", "--json"]).stdout.split(separator: "\n")
        for key in Self.keys {
            XCTAssertTrue(audit.contains { $0.contains("\"event\":\"sign\"") && $0.contains("\"label\":\"\(key.label)\"") }, "\(key.label)")
        }
    }

    func testSSHLogsInWithTheAgentAndNotWhileTheVaultIsLocked() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        let port = try startSSHD(authorizedKeys: try publicLine("id_p256") + "\n")
        let first = try login(port: port, socket: socket)
        XCTAssertEqual(first.status, 0, text(first.err))
        XCTAssertEqual(text(first.out), "logged-in\n")

        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let locked = try login(port: port, socket: socket)
        XCTAssertEqual(locked.status, 255, "no key while locked: \(text(locked.err))")
        XCTAssertTrue(text(locked.err).contains("Permission denied (publickey)"), text(locked.err))
        let none = try openSSH(["/usr/bin/ssh-add", "-l"], socket: socket)
        XCTAssertEqual(none.status, 1)
        XCTAssertEqual(text(none.out), "The agent has no identities.\n")

        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        let again = try login(port: port, socket: socket)
        XCTAssertEqual(again.status, 0, text(again.err))
        XCTAssertEqual(text(again.out), "logged-in\n")
    }

    func testRemovedKeysAndALockedAgentOfferNothing() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        let removed = try openSSH(["/usr/bin/ssh-add", "-d", path("id_rsa.pub")], socket: socket)
        XCTAssertEqual(removed.status, 0, text(removed.err))
        let listed = try openSSH(["/usr/bin/ssh-add", "-L"], socket: socket)
        XCTAssertEqual(text(listed.out).split(separator: "\n").count, Self.keys.count - 1)
        XCTAssertFalse(text(listed.out).contains("ssh-rsa"), "taken off the list")
        XCTAssertEqual(try h.run(["ssh-public-key", "rsa-key", "-k", h.vault]).status, 0, "still in the vault")

        // ssh-add -x and -X read the passphrase through SSH_ASKPASS when told to.
        let askpass = path("askpass")
        try "#!/bin/sh\necho \"$(cat \(path("lock-passphrase")))\"\n".write(toFile: askpass, atomically: true, encoding: .utf8)
        chmod(askpass, 0o755)
        let ask = ["SSH_ASKPASS": askpass, "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"]
        try "agent lock 1".write(toFile: path("lock-passphrase"), atomically: true, encoding: .utf8)
        let lock = try openSSH(["/usr/bin/ssh-add", "-x"], socket: socket, extra: ask)
        XCTAssertEqual(lock.status, 0, text(lock.err))
        XCTAssertEqual(text(try openSSH(["/usr/bin/ssh-add", "-l"], socket: socket).out), "The agent has no identities.\n")
        try "wrong".write(toFile: path("lock-passphrase"), atomically: true, encoding: .utf8)
        XCTAssertNotEqual(try openSSH(["/usr/bin/ssh-add", "-X"], socket: socket, extra: ask).status, 0)
        try "agent lock 1".write(toFile: path("lock-passphrase"), atomically: true, encoding: .utf8)
        XCTAssertEqual(try openSSH(["/usr/bin/ssh-add", "-X"], socket: socket, extra: ask).status, 0)
        XCTAssertEqual(text(try openSSH(["/usr/bin/ssh-add", "-L"], socket: socket).out).split(separator: "\n").count, Self.keys.count - 1)

        XCTAssertEqual(try openSSH(["/usr/bin/ssh-add", "-D"], socket: socket).status, 0)
        XCTAssertEqual(text(try openSSH(["/usr/bin/ssh-add", "-l"], socket: socket).out), "The agent has no identities.\n")
    }

    func testAStartedAgentRefusesASecondOnItsSocketAndCleansUpOnTERM() throws {
        let dir = try socketDirectory("agent")
        let socket = try startAgent(dir + "/agent.sock")
        let second = try h.run(["ssh-agent", "-a", socket, h.vault])
        XCTAssertEqual(second.status, 220)
        XCTAssertEqual(second.stderr, "keychainfs: the agent did not start: \(socket): another agent is listening there\n")
        let open = try h.run(["ssh-agent", "-a", "/tmp/kcfs-agent-\(getpid()).sock", h.vault])
        XCTAssertEqual(open.status, 220, "a directory others may write to")
        XCTAssertTrue(open.stderr.contains("/tmp: cannot hold the agent's socket: other users may write to it"), open.stderr)

        let killed = try h.run(["ssh-agent", "-k"], env: ["SSH_AGENT_PID": String(try agentPID(socket))])
        XCTAssertEqual(killed.status, 0, "\(killed)")
        XCTAssertTrue(killed.stdout.hasPrefix("unset SSH_AUTH_SOCK;\nunset SSH_AGENT_PID;\n"), killed.stdout)
        XCTAssertTrue(h.waitUntil(5) { !FileManager.default.fileExists(atPath: socket) }, "the socket is removed")
        let restarted = try startAgent(socket)
        XCTAssertEqual(try openSSH(["/usr/bin/ssh-add", "-l"], socket: restarted).status, 0)
    }

    func testSystemdSocketActivationServesFromThePassedSocket() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate") else {
            throw XCTSkip("systemd-socket-activate is not installed")
        }
        let socket = try socketDirectory("agent") + "/agent.sock"
        // As keychainfs-ssh-agent.socket does: systemd listens, the agent starts on the first connection.
        var argv = ["/usr/bin/systemd-socket-activate", "-l", socket]
        for name in ["KEYCHAINFS_RUNTIME_DIR", "KEYCHAINFS_DEVICE_KEY"] { argv += ["-E", name + "=" + h.environment[name]!] }
        argv += [CLIHarness.binary, "ssh-agent", "-D", h.vault]
        var pid: pid_t = 0
        let cargv = argv.map { strdup($0) } + [nil]
        defer { for p in cargv { free(p) } }
        XCTAssertEqual(posix_spawn(&pid, argv[0], nil, nil, cargv, environ), 0)
        track(pid)
        XCTAssertTrue(h.waitUntil(10) { FileManager.default.fileExists(atPath: socket) }, "systemd-socket-activate listens")
        let listed = try openSSH(["/usr/bin/ssh-add", "-L"], socket: socket)
        XCTAssertEqual(listed.status, 0, text(listed.err))
        XCTAssertEqual(text(listed.out).split(separator: "\n").count, Self.keys.count)
    }

    /// The pid of the agent listening on `socket`, by its peer credentials.
    func agentPID(_ socket: String) throws -> pid_t {
        let client = try RawAgentClient(socket)
        var cred = (Int32(0), UInt32(0), UInt32(0))
        var length = socklen_t(MemoryLayout.size(ofValue: cred))
        getsockopt(client.fd, SOL_SOCKET, SO_PEERCRED, &cred, &length)
        return cred.0
    }
}
