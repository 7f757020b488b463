import Foundation
import KeychainTestSupport
import XCTest

/// Programs that use an agent besides ssh: sshd with its host key in the keychain
/// (`HostKeyAgent`), and git signing commits with `gpg.format ssh`.
final class SSHAgentUseTests: SSHAgentTestCase {
    func testSSHDServesItsHostKeyFromTheKeychain() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        // The host key is the vault's P-384 key; sshd has only its public half on disk.
        try FileManager.default.removeItem(atPath: path("id_p384"))
        let login = try loginThroughHostKeyAgent(hostKey: path("id_p384.pub"), hostLine: try publicLine("id_p384"), socket: socket)
        XCTAssertEqual(login.status, 0, "the client checked the keychain's host key: \(text(login.err))")
        XCTAssertEqual(text(login.out), "logged-in\n")
        let audit = try h.run(["audit", "--json"]).stdout
        XCTAssertTrue(audit.split(separator: "\n").contains { $0.contains("\"event\":\"sign\"") && $0.contains("\"label\":\"p384-key\"") },
                      "the host key's signature is audited")
    }

    func testGitSignsACommitThatSSHKeygenVerifies() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/git") else { throw XCTSkip("git is not installed") }
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        let repo = path("repo")
        let pub = try publicLine("id_p256")
        try FileManager.default.removeItem(atPath: path("id_p256"))
        let parts = pub.split(separator: " ")
        try "dev@example.com \(parts[0]) \(parts[1])\n".write(toFile: path("allowed_signers"), atomically: true, encoding: .utf8)
        let env = ["HOME": h.dir, "GIT_CONFIG_NOSYSTEM": "1"]
        func git(_ args: [String]) throws -> Spawn.Outcome {
            try openSSH(["/usr/bin/git", "-C", repo] + args, socket: socket, extra: env)
        }
        try FileManager.default.createDirectory(atPath: repo, withIntermediateDirectories: true)
        for args in [["init", "-q"], ["config", "user.name", "Dev"], ["config", "user.email", "dev@example.com"],
                     ["config", "gpg.format", "ssh"], ["config", "user.signingkey", "key::" + pub],
                     ["config", "gpg.ssh.allowedSignersFile", path("allowed_signers")]] {
            let r = try git(args)
            XCTAssertEqual(r.status, 0, "\(args): \(text(r.err))")
        }
        let commit = try git(["commit", "-q", "-S", "--allow-empty", "-m", "signed by the keychain"])
        XCTAssertEqual(commit.status, 0, text(commit.err))
        let verified = try git(["verify-commit", "HEAD"])
        XCTAssertEqual(verified.status, 0, text(verified.err))
        XCTAssertTrue(text(verified.err).contains("Good \"git\" signature for dev@example.com"), text(verified.err))
    }
}
