import Foundation
import KeychainTestSupport
import XCTest

/// What OpenSSH's clients never send: malformed, oversized and unsupported messages each get
/// SSH_AGENT_FAILURE (5) or end only their own connection, and the agent serves on.
final class SSHAgentProtocolTests: SSHAgentTestCase {
    static let failure: [UInt8] = [5]

    /// Root's daemon is reached by a test user too.
    override class var sharesRuntimeDirectory: Bool { true }

    func testMalformedMessagesAreAnsweredWithFailure() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        let client = try RawAgentClient(socket)
        let cases: [(String, [UInt8])] = [
            ("an unknown message number", [200]),
            ("a sign request cut short", [13, 0, 0, 0, 9, 1, 2]),
            ("a sign request for a key the vault lacks", [13] + RawAgentClient.string(Array("ssh-ed25519".utf8)) + RawAgentClient.string([1]) + [0, 0, 0, 0]),
            ("a smartcard key", [20] + RawAgentClient.string(Array("/usr/lib/pkcs11.so".utf8)) + RawAgentClient.string([])),
            ("an extension", [27] + RawAgentClient.string(Array("nosuch@example.com".utf8))),
            ("a reply sent as a request", [14, 0, 0, 0, 0]),
            ("an unlock of an agent that is not locked", [23] + RawAgentClient.string(Array("x".utf8))),
            ("a lock whose passphrase runs past the frame", [22, 0, 0, 0, 50, 1]),
            ("a removal of a key it does not offer", [18] + RawAgentClient.string([9, 9, 9])),
        ]
        for (what, payload) in cases {
            client.sendFrame(payload)
            XCTAssertEqual(client.reply(), Self.failure, what)
        }
        client.sendFrame([11])
        XCTAssertEqual(RawAgentClient.blobs(client.reply() ?? []).count, Self.keys.count, "the same connection still serves")
    }

    func testAnImpossibleLengthEndsOnlyThatConnection() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        for length in [0, 256 * 1024 + 1, Int(UInt32.max)] {
            let client = try RawAgentClient(socket)
            client.send(RawAgentClient.uint32(length))
            XCTAssertEqual(client.reply(), Self.failure, "length \(length)")
            XCTAssertNil(client.reply(), "then the connection ends (length \(length))")
        }
        // Half a frame, then the client goes away: nothing is left waiting.
        try RawAgentClient(socket).send([0, 0, 1, 0, 13, 0])
        let other = try RawAgentClient(socket)
        other.sendFrame([11])
        XCTAssertEqual(RawAgentClient.blobs(other.reply() ?? []).count, Self.keys.count)
    }

    func testRSASignsOnlyWithSHA2() throws {
        let socket = try startAgent(socketDirectory("agent") + "/agent.sock")
        let client = try RawAgentClient(socket)
        client.sendFrame([11])
        guard let rsa = RawAgentClient.blobs(client.reply() ?? []).first(where: { $0.starts(with: [0, 0, 0, 7] + Array("ssh-rsa".utf8)) }) else {
            return XCTFail("no RSA key offered")
        }
        func sign(flags: UInt8) -> [UInt8]? {
            client.sendFrame([13] + RawAgentClient.string(rsa) + RawAgentClient.string(Array("data".utf8)) + [0, 0, 0, flags])
            return client.reply()
        }
        XCTAssertEqual(sign(flags: 0), Self.failure, "ssh-rsa (SHA-1) is refused")
        for (flags, name) in [(UInt8(2), "rsa-sha2-256"), (4, "rsa-sha2-512")] {
            let reply = sign(flags: flags) ?? []
            XCTAssertEqual(reply.first, 14, "a signature for flags \(flags)")
            // string signature blob: string algorithm name, string 256 signature bytes.
            XCTAssertEqual(Array(reply.dropFirst(5).prefix(4 + name.utf8.count)), RawAgentClient.string(Array(name.utf8)))
            XCTAssertEqual(reply.count, 1 + 4 + 4 + name.utf8.count + 4 + 256)
        }
    }

    func testAnotherUserSeesNoKeyAndCannotReachTheSocket() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root to create a user") }
        let accounts = TestAccounts()
        defer {
            stopStarted()  // userdel refuses a user whose agent still runs
            accounts.remove()
        }
        let user = try accounts.makeUser()
        let prefix = user.setpriv(initGroups: false)
        let rootSocket = try startAgent(socketDirectory("agent") + "/agent.sock")
        // The user's own agent, against the same vault and daemon: the keys are root's group's.
        let own = try startAgent(socketDirectory("theirs", owner: user.uid, gid: user.gid) + "/agent.sock", prefix: prefix)
        let listed = try openSSH(["/usr/bin/ssh-add", "-L"], socket: own, prefix: prefix)
        XCTAssertEqual(listed.status, 1, text(listed.err))
        XCTAssertEqual(text(listed.out), "The agent has no identities.\n")
        // Root's agent: its directory keeps the user out.
        let reached = try openSSH(["/usr/bin/ssh-add", "-l"], socket: rootSocket, prefix: prefix)
        XCTAssertEqual(reached.status, 2, text(reached.err))
        XCTAssertTrue(text(reached.err).contains("Permission denied"), text(reached.err))
    }
}
