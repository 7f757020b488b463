import Foundation
import KeychainTestSupport
import XCTest

/// Keys made by `keychainfs generate-key`: in the daemon (Ed25519, ECDSA, RSA) and inside a
/// software TPM (P-256, as a Secure Enclave key), logging in through the agent.
final class SSHGeneratedKeyTests: SSHAgentTestCase {
    nonisolated(unsafe) static var tpm: SoftwareTPM?

    override class func setUp() {
        tpm = SoftwareTPM.forHarness()
        super.setUp()
    }

    override class func tearDown() {
        super.tearDown()
        tpm?.stopForHarness()
        tpm = nil
    }

    func testGeneratedKeysLogIn() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        var lines: [String] = []
        for (args, type) in [(["-t", "ed25519"], "ssh-ed25519"), (["-t", "ecdsa", "-b", "521"], "ecdsa-sha2-nistp521"),
                             (["-t", "rsa", "-b", "2048"], "ssh-rsa")] {
            let made = try h.run(["generate-key"] + args + ["-l", "made \(type)", "--ssh"])
            XCTAssertEqual(made.status, 0, "\(made)")
            XCTAssertTrue(made.stdout.hasPrefix(type + " ") && made.stdout.hasSuffix(" made \(type)\n"), made.stdout)
            lines.append(made.stdout)
        }
        XCTAssertEqual(try h.run(["generate-key", "-t", "ecdsa", "-b", "300", "-l", "x"]).status, 2)
        XCTAssertEqual(try h.run(["generate-key", "-t", "dsa", "-l", "x"]).status, 2)
        XCTAssertEqual(try h.run(["generate-key", "-t", "ed25519"]).status, 2, "a label is required")
        let listed = text(try openSSH(["/usr/bin/ssh-add", "-L"], socket: socket).out)
        for line in lines { XCTAssertTrue(listed.contains(line), "offered: \(line)") }

        let port = try startSSHD(authorizedKeys: lines[0])
        XCTAssertEqual(try login(port: port, socket: socket).status, 0)
    }

    func testATPMKeySignsInsideTheTPM() throws {
        guard Self.tpm != nil else { throw XCTSkip("swtpm is not installed (scripts/setup.sh)") }
        let made = try h.run(["generate-key", "-t", "ecdsa", "--tpm", "-l", "tpm key", "--ssh"])
        XCTAssertEqual(made.status, 0, "\(made)")
        XCTAssertTrue(made.stdout.hasPrefix("ecdsa-sha2-nistp256 "), made.stdout)
        XCTAssertEqual(try h.run(["generate-key", "-t", "ed25519", "--tpm", "-l", "x"]).status, 2, "the TPM makes P-256 keys only")
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        let port = try startSSHD(authorizedKeys: made.stdout)
        let first = try login(port: port, socket: socket)
        XCTAssertEqual(first.status, 0, text(first.err))
        // The TPM key is WhenUnlockedThisDeviceOnly: locked, it is neither offered nor used.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(try login(port: port, socket: socket).status, 255)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(try login(port: port, socket: socket).status, 0)
    }

    /// sshd's host key inside the TPM: sshd signs each connection's exchange through the agent
    /// (`HostKeyAgent`), and a client whose known_hosts holds the key's `.pub` line accepts it.
    func testSSHDHostKeyInsideTheTPM() throws {
        guard Self.tpm != nil else { throw XCTSkip("swtpm is not installed (scripts/setup.sh)") }
        let made = try h.run(["generate-key", "-t", "ecdsa", "--tpm", "-l", "tpm host key", "--ssh"])
        XCTAssertEqual(made.status, 0, "\(made)")
        try made.stdout.write(toFile: path("tpm_host_key.pub"), atomically: true, encoding: .utf8)
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        let login = try loginThroughHostKeyAgent(hostKey: path("tpm_host_key.pub"), hostLine: made.stdout, socket: socket)
        XCTAssertEqual(login.status, 0, "the client checked the TPM's host key: \(text(login.err))")
        XCTAssertEqual(text(login.out), "logged-in\n")
        let audit = try h.run(["audit", "--json"]).stdout
        XCTAssertTrue(audit.split(separator: "\n").contains { $0.contains("\"event\":\"sign\"") && $0.contains("\"label\":\"tpm host key\"") },
                      "the host key's signature is audited")
    }
}
