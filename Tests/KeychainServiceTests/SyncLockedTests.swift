import Foundation
import KeychainTestSupport
import XCTest

/// Changes that arrive while the vault is locked (PRODUCT 15, issue 17): an AfterFirstUnlock
/// item applies at once; a WhenUnlocked one waits in the vault as the ciphertext it came as,
/// survives a restart of the daemon, and applies at the unlock, with the server gone by then.
final class SyncLockedTests: XCTestCase {
    var circle: SyncHosts?

    override func tearDown() {
        circle?.tearDown()
        super.tearDown()
    }

    func testWhenUnlockedChangesWaitAsCiphertextUntilTheUnlock() throws {
        let c = try SyncHosts(count: 2)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        try c.formCircle()
        let account = "acct-\(c.tag)"
        let whenUnlocked = "wu-\(c.tag)", afterFirst = "afu-\(c.tag)"
        let secretWU = "wu-secret-\(c.tag)", secretAFU = "afu-secret-\(c.tag)"
        XCTAssertEqual(try b.run(["lock-keychain"]).status, 0)

        try c.add(a, whenUnlocked, account, secretWU)  // WhenUnlocked, the default class
        XCTAssertEqual(try a.run(["add-generic-password", "-s", afterFirst, "-a", account, "-w", secretAFU,
                                  "--accessible", "AfterFirstUnlock", "--synchronizable"]).status, 0)
        let end = try c.lastLogPosition()
        XCTAssertTrue(b.waitUntil(60) { c.status(b)["cursor"] as? Int == end }, c.shown(b))
        XCTAssertEqual(c.status(b)["waiting"] as? Int, 1, c.shown(b))
        XCTAssertEqual(try c.secret(b, afterFirst, account), secretAFU, "AfterFirstUnlock applies while locked")
        XCTAssertNil(try c.secret(b, whenUnlocked, account))

        // The waiting change is in B's vault file, and only as ciphertext.
        let file = try Data(contentsOf: URL(fileURLWithPath: b.vault))
            + ((try? Data(contentsOf: URL(fileURLWithPath: b.vault + "-wal"))) ?? Data())
        for needle in [whenUnlocked, secretWU] {
            XCTAssertNil(file.range(of: Data(needle.utf8)), "\(needle) is in B's vault in the clear")
        }

        // A new daemon, and no server: the unlock applies what waited, from the vault alone.
        XCTAssertEqual(try b.run(["stop"]).status, 0)
        c.server.stop()
        let unlocked = try b.run(["unlock-keychain"], input: "pass phrase 1\n")
        XCTAssertEqual(unlocked.status, 0, "\(unlocked)")
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, whenUnlocked, account) == secretWU }, c.shown(b))
        XCTAssertEqual(c.status(b)["waiting"] as? Int, 0, c.shown(b))
        XCTAssertEqual(c.status(b)["rejected"] as? Int, 0, c.shown(b))
    }
}
