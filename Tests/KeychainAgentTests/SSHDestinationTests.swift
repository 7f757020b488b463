import Foundation
import KeychainCrypto
import KeychainTestSupport
import XCTest

/// `ssh-add -h`: a key restricted to hosts logs in only there, and `session-bind@openssh.com`
/// records which host a connection reached, checked by the host key's signature.
final class SSHDestinationTests: SSHAgentTestCase {
    /// Two keys restricted with `ssh-add -h`, one to the test's sshd and one to another host; the
    /// sshd accepts either. Only the first logs in; local use (`ssh-add -l`) sees both.
    func testARestrictedKeyLogsInOnlyAtItsHost() throws {
        for name in ["id_here", "id_elsewhere"] {
            try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "ecdsa", "-C", name, "-f", path(name)])
        }
        try tool(["/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path("other_host_key")])
        let port = try startSSHD(authorizedKeys: try publicLine("id_here") + "\n" + publicLine("id_elsewhere") + "\n")
        // ssh-add looks the hosts' keys up by name; ssh is told the same name (HostKeyAlias).
        try ("here " + publicLine("ssh_host_key") + "\nelsewhere " + publicLine("other_host_key") + "\n")
            .write(toFile: path("known_hosts"), atomically: true, encoding: .utf8)
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        for (name, host) in [("id_here", "here"), ("id_elsewhere", "elsewhere")] {
            let added = try openSSH(["/usr/bin/ssh-add", "-H", path("known_hosts"), "-h", host, path(name)], socket: socket)
            XCTAssertEqual(added.status, 0, text(added.err))
            try FileManager.default.removeItem(atPath: path(name))  // from now on only the agent holds it
        }
        XCTAssertEqual(try h.run(["ssh-public-key", "id_here", "-k", h.vault]).stdout, try publicLine("id_here") + "\n", "in the vault")
        let listed = text(try openSSH(["/usr/bin/ssh-add", "-l"], socket: socket).out)
        XCTAssertTrue(listed.contains("id_here") && listed.contains("id_elsewhere"), "unbound, local use lists both: \(listed)")

        // Only the key restricted to this host logs in; the other is neither offered nor used.
        let login = try restrictedLogin(port: port, socket: socket, key: "id_here")
        XCTAssertEqual(login.status, 0, text(login.err))
        XCTAssertEqual(text(login.out), "logged-in\n")
        // The signature's audit line names the ssh that asked and the host it was bound to.
        let hostFingerprint = try Spawn.run(["/usr/bin/ssh-keygen", "-l", "-E", "sha256", "-f", path("ssh_host_key.pub")],
                                            environment: h.environment, input: Data(), timeout: 30)
        let fingerprint = String(text(hostFingerprint.out).split(separator: " ")[1])
        let signLines = try h.run(["audit", "--json"]).stdout.split(separator: "\n").filter {
            $0.contains("\"event\":\"sign\"") && $0.contains("\"label\":\"id_here\"")
        }
        XCTAssertEqual(signLines.count, 1, "\(signLines)")
        XCTAssertTrue(signLines.first?.contains("for-uid=0 for-pid=") == true, "\(signLines)")
        XCTAssertTrue(signLines.first?.contains("for-host=\(fingerprint) for-exe=/usr/bin/ssh") == true, "\(signLines) \(fingerprint)")
        let refused = try restrictedLogin(port: port, socket: socket, key: "id_elsewhere")
        XCTAssertEqual(refused.status, 255, "restricted to another host: \(text(refused.err))")

        // The restriction is kept with the key: another agent over the same vault applies it.
        let second = try startAgent(socketDirectory("agent2") + "/agent.sock")
        XCTAssertEqual(try restrictedLogin(port: port, socket: second, key: "id_here").status, 0)
        XCTAssertEqual(try restrictedLogin(port: port, socket: second, key: "id_elsewhere").status, 255)
        // ssh-add -h of a key the vault holds without the restriction is refused, not pretended.
        let again = try openSSH(["/usr/bin/ssh-add", "-H", path("known_hosts"), "-h", "here", path("id_p256")], socket: socket)
        let listing = text(try openSSH(["/usr/bin/ssh-add", "-L"], socket: socket).out)
        XCTAssertNotEqual(again.status, 0, text(again.err) + listing)
    }

    /// Hosts with ECDSA and RSA host keys: their session-bind signatures are checked by the
    /// daemon (`checkSignature`), and a key restricted to them logs in.
    func testARestrictedKeyLogsInAtHostsWithECDSAAndRSAHostKeys() throws {
        for (type, args) in [("ecdsa", ["-t", "ecdsa", "-b", "384"]), ("rsa", ["-t", "rsa", "-b", "2048"])] {
            let user = "id_for_" + type, host = "host_" + type
            try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "ed25519", "-C", user, "-f", path(user)])
            try tool(["/usr/bin/ssh-keygen", "-q", "-N", ""] + args + ["-f", path(host)])
            let port = try startSSHD(authorizedKeys: try publicLine(user) + "\n", hostKey: path(host))
            try ("here " + publicLine(host) + "\n").write(toFile: path("known_hosts"), atomically: true, encoding: .utf8)
            let socket = try startAgent(socketDirectory("agent-" + type) + "/agent.sock")
            let added = try openSSH(["/usr/bin/ssh-add", "-H", path("known_hosts"), "-h", "here", path(user)], socket: socket)
            XCTAssertEqual(added.status, 0, text(added.err))
            try FileManager.default.removeItem(atPath: path(user))
            let login = try restrictedLogin(port: port, socket: socket, key: user)
            XCTAssertEqual(login.status, 0, "\(type) host key: \(text(login.err))")
            XCTAssertEqual(text(login.out), "logged-in\n")
        }
    }

    /// On a connection bound to no host, a restricted key signs nothing: ssh always binds first,
    /// so an unbound signature request is not a login ssh made.
    func testARestrictedKeySignsNothingOnAnUnboundConnection() throws {
        try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "ed25519", "-C", "bound-only", "-f", path("id_bound")])
        try tool(["/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path("some_host_key")])
        try ("somehost " + publicLine("some_host_key") + "\n").write(toFile: path("known_hosts"), atomically: true, encoding: .utf8)
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        XCTAssertEqual(try openSSH(["/usr/bin/ssh-add", "-H", path("known_hosts"), "-h", "somehost", path("id_bound")], socket: socket).status, 0)
        let blob = try keyBlob("id_bound")
        let client = try RawAgentClient(socket)
        client.sendFrame([13] + RawAgentClient.string(blob) + RawAgentClient.string([1, 2, 3]) + [0, 0, 0, 0])
        XCTAssertEqual(client.reply(), [5], "SSH_AGENT_FAILURE")
        let signed = try openSSH(["/usr/bin/ssh-keygen", "-Y", "sign", "-n", "file", "-f", path("id_bound.pub")], socket: socket, input: "data")
        XCTAssertNotEqual(signed.status, 0, "ssh-keygen -Y sign with a restricted key")
        // Listed on an unbound connection (local use), but not after a binding that failed: that
        // connection is ssh's to some host, which could not be checked.
        client.sendFrame([11])
        XCTAssertTrue(RawAgentClient.blobs(client.reply() ?? []).contains(blob))
        client.sendFrame([27] + RawAgentClient.string(Array("session-bind@openssh.com".utf8)) + RawAgentClient.string(blob)
                         + RawAgentClient.string([UInt8](repeating: 1, count: 32)) + RawAgentClient.string([1]) + [0])
        XCTAssertEqual(client.reply(), [5], "a bad binding")
        client.sendFrame([11])
        XCTAssertFalse(RawAgentClient.blobs(client.reply() ?? []).contains(blob), "hidden after the failed binding")
    }

    /// session-bind@openssh.com: a binding whose signature the host key did not make, or that
    /// follows a binding for a login, is refused; a good one is taken once per identifier.
    func testSessionBindingsAreCheckedByTheHostKeysSignature() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        let (hostPublic, hostSecret) = try Signature.keyPair()
        defer { hostSecret.wipe() }
        let hostBlob = RawAgentClient.string(Array("ssh-ed25519".utf8)) + RawAgentClient.string(hostPublic)
        // One connection bound for a login, another for forwarding.
        var connections: [Bool: RawAgentClient] = [:]
        func bind(_ sessionID: [UInt8], signedBy secret: SecureBytes, forwarding: Bool) throws -> [UInt8]? {
            let signature = RawAgentClient.string(Array("ssh-ed25519".utf8))
                + RawAgentClient.string(try Signature.sign(sessionID, secretKey: secret))
            let client = try connections[forwarding] ?? RawAgentClient(socket)
            connections[forwarding] = client
            client.sendFrame([27] + RawAgentClient.string(Array("session-bind@openssh.com".utf8)) + RawAgentClient.string(hostBlob)
                             + RawAgentClient.string(sessionID) + RawAgentClient.string(signature) + [forwarding ? 1 : 0])
            return client.reply()
        }
        let (_, otherSecret) = try Signature.keyPair()
        defer { otherSecret.wipe() }
        XCTAssertEqual(try bind(Array(repeating: 7, count: 32), signedBy: otherSecret, forwarding: false), [5], "signed by another key")
        XCTAssertEqual(try bind(Array(repeating: 7, count: 32), signedBy: hostSecret, forwarding: false), [6], "the host's own signature")
        XCTAssertEqual(try bind(Array(repeating: 8, count: 32), signedBy: hostSecret, forwarding: false), [5], "bound for a login already")
        // A forwarding connection takes further hops, and the same one again.
        XCTAssertEqual(try bind(Array(repeating: 9, count: 32), signedBy: hostSecret, forwarding: true), [6])
        XCTAssertEqual(try bind(Array(repeating: 10, count: 32), signedBy: hostSecret, forwarding: true), [6])
        XCTAssertEqual(try bind(Array(repeating: 9, count: 32), signedBy: hostSecret, forwarding: true), [6], "recorded already")
    }

    /// ssh to the sshd as `here`'s name, offering the agent's keys but signing with `key` only.
    private func restrictedLogin(port: Int, socket: String, key: String) throws -> Spawn.Outcome {
        try openSSH(["/usr/bin/ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentityAgent=" + socket,
                     "-o", "IdentitiesOnly=yes", "-o", "IdentityFile=" + path(key + ".pub"),
                     "-o", "UserKnownHostsFile=" + path("known_hosts"), "-o", "HostKeyAlias=here",
                     "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10",
                     "-p", String(port), "root@127.0.0.1", "echo", "logged-in"], socket: socket)
    }

    /// The key blob of a `.pub` file (its base64 field).
    private func keyBlob(_ key: String) throws -> [UInt8] {
        let field = try publicLine(key).split(separator: " ")[1]
        return Array(Data(base64Encoded: String(field)) ?? Data())
    }
}
