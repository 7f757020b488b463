import Foundation
import KeychainTestSupport
import XCTest

/// `ssh-add FILE` stores the key in the vault (non-extractable), with `-t` and `-c` kept as the
/// key's lifetime and a presence check per use (`-h`: SSHDestinationTests).
final class SSHAddTests: SSHAgentTestCase {
    func testAnAddedKeyLogsInAfterItsFileIsDeleted() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "ecdsa", "-b", "384", "-C", "laptop key", "-f", path("id_new")])
        let added = try openSSH(["/usr/bin/ssh-add", path("id_new")], socket: socket)
        XCTAssertEqual(added.status, 0, text(added.err))
        let pub = try publicLine("id_new")
        try FileManager.default.removeItem(atPath: path("id_new"))

        let port = try startSSHD(authorizedKeys: pub + "\n")
        let login = try self.login(port: port, socket: socket)
        XCTAssertEqual(login.status, 0, text(login.err))
        XCTAssertEqual(text(login.out), "logged-in\n")
        XCTAssertTrue(text(try openSSH(["/usr/bin/ssh-add", "-L"], socket: socket).out).contains(pub + "\n"), "listed with its comment")

        // In the vault as a non-extractable private key labelled with the comment.
        let dump = try h.run(["dump-keychain"]).stdout
        let item = dump.components(separatedBy: "\nkeychain: ").first { $0.contains("\"labl\"<blob>=\"laptop key\"") } ?? ""
        XCTAssertTrue(item.contains("\"extr\"<uint32>=0"), item)
        XCTAssertTrue(item.contains("\"kcls\"<uint32>=1"), item)
        let exported = try h.run(["export", "-t", "privKeys", "-l", "laptop key", "-o", path("out.pem")])
        XCTAssertNotEqual(exported.status, 0, "not exported: \(exported)")
        XCTAssertEqual(try h.run(["ssh-public-key", "laptop key", "-k", h.vault]).stdout, pub + "\n")
        let again = try openSSH(["/usr/bin/ssh-add", path("id_p256")], socket: socket)
        XCTAssertEqual(again.status, 0, "a key the vault holds already: \(text(again.err))")
        XCTAssertEqual(text(try openSSH(["/usr/bin/ssh-add", "-L"], socket: socket).out).split(separator: "\n").count, Self.keys.count + 1,
                       "added once")
    }

    func testAnEd25519KeyIsStoredAndSigns() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "ed25519", "-C", "ed key", "-f", path("id_ed25519")])
        let added = try openSSH(["/usr/bin/ssh-add", path("id_ed25519")], socket: socket)
        XCTAssertEqual(added.status, 0, text(added.err))
        let pub = try publicLine("id_ed25519")
        try FileManager.default.removeItem(atPath: path("id_ed25519"))
        XCTAssertTrue(text(try openSSH(["/usr/bin/ssh-add", "-L"], socket: socket).out).contains(pub + "\n"))
        let port = try startSSHD(authorizedKeys: pub + "\n")
        let login = try self.login(port: port, socket: socket)
        XCTAssertEqual(login.status, 0, text(login.err))
        XCTAssertEqual(text(login.out), "logged-in\n")
    }

    func testALifetimeEndsTheKeyInTheVaultToo() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "ecdsa", "-C", "short-lived", "-f", path("id_short")])
        let added = try openSSH(["/usr/bin/ssh-add", "-t", "2", path("id_short")], socket: socket)
        XCTAssertEqual(added.status, 0, text(added.err))
        XCTAssertTrue(text(try openSSH(["/usr/bin/ssh-add", "-l"], socket: socket).out).contains("short-lived"))
        // A client that listed the key while it lived, and keeps its connection, signs no more after.
        let client = try RawAgentClient(socket)
        client.sendFrame([11])
        let blobs = RawAgentClient.blobs(client.reply() ?? [])
        XCTAssertEqual(blobs.count, Self.keys.count + 1)
        usleep(2_500_000)
        for blob in blobs {
            client.sendFrame([13] + RawAgentClient.string(blob) + RawAgentClient.string([1, 2, 3]) + [0, 0, 0, 2])
            let reply = client.reply() ?? []
            XCTAssertEqual(reply.first, blob == blobs.last ? 5 : 14, "only the expired key is refused")
        }
        XCTAssertFalse(text(try openSSH(["/usr/bin/ssh-add", "-l"], socket: socket).out).contains("short-lived"), "expired")
        XCTAssertEqual(try h.run(["ssh-public-key", "short-lived", "-k", h.vault]).status, 44, "gone from the vault")
    }

    func testConstraintsOnAKeyTheVaultHoldsAreRefusedNotPretended() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        // id_p256 is in the vault without constraints: -c or -t would not reach the stored key.
        let confirmed = try openSSH(["/usr/bin/ssh-add", "-c", path("id_p256")], socket: socket)
        XCTAssertNotEqual(confirmed.status, 0, "ssh-add -c of a stored key: \(text(confirmed.err))")
        let limited = try openSSH(["/usr/bin/ssh-add", "-t", "60", path("id_p256")], socket: socket)
        XCTAssertNotEqual(limited.status, 0, "ssh-add -t of a stored key")
        XCTAssertEqual(try openSSH(["/usr/bin/ssh-add", path("id_p256")], socket: socket).status, 0, "without constraints: already added")
    }

    func testAConfirmedKeyAsksTheApprovalProgramOnEachUse() throws {
        let approval = try ScriptedApprovalProgram(in: h.dir)
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", approval.path]).status, 0)
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "ecdsa", "-C", "confirm-me", "-f", path("id_confirm")])
        XCTAssertEqual(try openSSH(["/usr/bin/ssh-add", "-c", path("id_confirm")], socket: socket).status, 0)
        let port = try startSSHD(authorizedKeys: try publicLine("id_confirm") + "\n")

        try approval.say("no")
        let denied = try login(port: port, socket: socket)
        XCTAssertEqual(denied.status, 255, "refused by the approval program: \(text(denied.err))")
        XCTAssertEqual(approval.callLines.count, 1, "asked once")
        // Told which ssh asks through the agent, and for which host.
        let call = approval.callLines.first ?? ""
        XCTAssertTrue(call.contains("--reason presence") && call.contains("--for-uid 0 --for-pid ") && call.contains("--for-exe /usr/bin/ssh --for-host SHA256:"),
                      call)

        try approval.say("yes")
        for round in 1...2 {
            let approved = try login(port: port, socket: socket)
            XCTAssertEqual(approved.status, 0, text(approved.err))
            XCTAssertEqual(approval.callLines.count, 1 + round, "asked once per use")
        }
    }

    func testAnRSAKeyIsStoredWithItsCRTValuesAndSignsWithSHA2() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "rsa", "-b", "3072", "-C", "rsa added", "-f", path("id_added")])
        let added = try openSSH(["/usr/bin/ssh-add", path("id_added")], socket: socket)
        XCTAssertEqual(added.status, 0, text(added.err))
        let pub = try publicLine("id_added")
        try FileManager.default.removeItem(atPath: path("id_added"))
        let port = try startSSHD(authorizedKeys: pub + "\n")
        let login = try self.login(port: port, socket: socket)
        XCTAssertEqual(login.status, 0, text(login.err))
        // The agent signs RSA only with SHA-2 (SSHAgentProtocolTests), so this login used it.
    }

    /// `keychainfs ssh-agent --extractable`: keys from ssh-add are stored extractable (without
    /// it, above, `extr` is 0 and export is refused).
    func testAnExtractableAgentStoresKeysExtractable() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock", options: ["--extractable"])
        try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "ecdsa", "-C", "kept-out", "-f", path("id_out")])
        let added = try openSSH(["/usr/bin/ssh-add", path("id_out")], socket: socket)
        XCTAssertEqual(added.status, 0, text(added.err))
        let dump = try h.run(["dump-keychain"]).stdout
        let item = dump.components(separatedBy: "\nkeychain: ").first { $0.contains("\"labl\"<blob>=\"kept-out\"") } ?? ""
        XCTAssertTrue(item.contains("\"extr\"<uint32>=1"), item)
        XCTAssertTrue(item.contains("\"next\"<uint32>=0"), item)
    }

    /// `keychainfs ssh-agent --delete-removed`: `ssh-add -d` deletes the key from the vault, where
    /// by default it only leaves the agent's list.
    func testADeletingAgentRemovesKeysFromTheVault() throws {
        try tool(["/usr/bin/ssh-keygen", "-q", "-N", "", "-t", "ed25519", "-C", "short-stay", "-f", path("id_stay")])
        let keeping = try startAgent(socketDirectory("agent") + "/agent.sock")
        XCTAssertEqual(try openSSH(["/usr/bin/ssh-add", path("id_stay")], socket: keeping).status, 0)
        XCTAssertEqual(try openSSH(["/usr/bin/ssh-add", "-d", path("id_stay")], socket: keeping).status, 0)
        XCTAssertEqual(try h.run(["ssh-public-key", "short-stay", "-k", h.vault]).status, 0, "still in the vault")

        let deleting = try startAgent(socketDirectory("agent2") + "/agent.sock", options: ["--delete-removed"])
        let removed = try openSSH(["/usr/bin/ssh-add", "-d", path("id_stay")], socket: deleting)
        XCTAssertEqual(removed.status, 0, text(removed.err))
        XCTAssertEqual(try h.run(["ssh-public-key", "short-stay", "-k", h.vault]).status, 44, "deleted from the vault")
        XCTAssertEqual(try h.run(["ssh-public-key", "p256 key", "-k", h.vault]).status, 0, "the other keys stay")
    }
}
