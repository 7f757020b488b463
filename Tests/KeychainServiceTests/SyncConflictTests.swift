import Foundation
import KeychainTestSupport
import XCTest

/// Conflicts as iCloud Keychain resolves them (PRODUCT 15), with nothing lost: the losing
/// version is kept in the item's history (`keychainfs history`).
final class SyncConflictTests: XCTestCase {
    var circle: SyncHosts?

    override func tearDown() {
        circle?.tearDown()
        super.tearDown()
    }

    /// `history -s -a -w` of a host: the kept passwords, newest first.
    func kept(_ h: CLIHarness, _ service: String, _ account: String) throws -> [String] {
        let r = try h.run(["history", "-s", service, "-a", account, "-w"])
        XCTAssertEqual(r.status, 0, "\(r)")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    func reasons(_ h: CLIHarness, _ service: String, _ account: String) throws -> [String] {
        let r = try h.run(["history", "-s", service, "-a", account, "--json"])
        XCTAssertEqual(r.status, 0, "\(r)")
        let list = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [[String: Any]] ?? []
        return list.compactMap { $0["reason"] as? String }
    }

    func testOnePrimaryKeyFromTwoHostsKeepsTheLowerUUIDAndTheOtherInHistory() throws {
        let c = try SyncHosts(count: 2)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        let service = "clash-\(c.tag)", account = "acct-\(c.tag)"
        let fromA = "secret-from-a-\(c.tag)", fromB = "secret-from-b-\(c.tag)"
        try c.found()
        try c.add(a, service, account, fromA)
        // B makes its own item of that name before it joins: two items, one primary key.
        try c.add(b, service, account, fromB)
        try c.join(1)
        var winner: String?
        XCTAssertTrue(try a.waitUntil(60) {
            let (onA, onB) = (try c.secret(a, service, account), try c.secret(b, service, account))
            winner = onA
            return onA != nil && onA == onB
        }, c.shown(a) + c.shown(b))
        let loser = winner == fromA ? fromB : fromA
        // B saw both: whichever lost is in its history, with the reason.
        XCTAssertTrue(try b.waitUntil(60) { try kept(b, service, account) == [loser] }, (try? kept(b, service, account))?.description ?? "?")
        XCTAssertEqual(try reasons(b, service, account), ["higher-uuid"])
        XCTAssertFalse(try kept(a, service, account).contains(winner!), "the winner is not set aside")
        // Without -w: the kept version's attributes, not its secret.
        let listed = try b.run(["history", "-s", service])
        XCTAssertTrue(listed.stdout.contains("reason: higher-uuid") && listed.stdout.contains(account), "\(listed)")
        XCTAssertFalse(listed.stdout.contains(loser), "\(listed)")
        XCTAssertEqual(try b.run(["history", "-s", "other-\(c.tag)", "-w"]).stdout, "")
    }

    func testConcurrentUpdatesFollowTheServersOrderAndTheLoserIsKept() throws {
        let c = try SyncHosts(count: 2)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        try c.formCircle()
        let service = "race-\(c.tag)", account = "acct-\(c.tag)"
        try c.add(a, service, account, "first-\(c.tag)")
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, service, account) == "first-\(c.tag)" }, c.shown(b))

        // The server goes away; both hosts keep working and change the same item.
        c.server.stop()
        let onA = "changed-on-a-\(c.tag)", onB = "changed-on-b-\(c.tag)"
        try c.add(a, service, account, onA, update: true)
        try c.add(b, service, account, onB, update: true)
        XCTAssertEqual(try c.secret(a, service, account), onA)
        XCTAssertEqual(try c.secret(b, service, account), onB)
        XCTAssertTrue(b.waitUntil(60) { c.status(b)["last-error"] != nil }, "B noticed the server is gone: \(c.shown(b))")

        // Back: whichever host reaches it first wins; the other's change is kept in its history.
        try c.server.start()
        var winner: String?
        XCTAssertTrue(try a.waitUntil(60) {
            let (x, y) = (try c.secret(a, service, account), try c.secret(b, service, account))
            winner = x
            return x != nil && x == y
        }, c.shown(a) + c.shown(b))
        let (winnerHost, loserHost) = winner == onA ? (a, b) : (b, a)
        let loser = winner == onA ? onB : onA
        XCTAssertTrue(try loserHost.waitUntil(60) { try kept(loserHost, service, account) == [loser] },
                      (try? kept(loserHost, service, account))?.description ?? "?")
        XCTAssertEqual(try reasons(loserHost, service, account), ["server-order"])
        XCTAssertEqual(try kept(winnerHost, service, account), [], "the winner lost nothing")
        XCTAssertNil(c.status(a)["last-error"], c.shown(a))
    }

    /// `history --restore ID` writes a kept loser back as a change made here: it syncs, and the
    /// other host reads it. An unknown id, or a version whose class key is locked, is refused.
    func testARestoredLoserReachesTheOtherHost() throws {
        let c = try SyncHosts(count: 2)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        try c.formCircle()
        let service = "restore-\(c.tag)", account = "acct-\(c.tag)"
        try c.add(a, service, account, "first-\(c.tag)")
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, service, account) == "first-\(c.tag)" }, c.shown(b))

        // Both change the item with the server away; one change loses and is kept.
        c.server.stop()
        let onA = "changed-on-a-\(c.tag)", onB = "changed-on-b-\(c.tag)"
        try c.add(a, service, account, onA, update: true)
        try c.add(b, service, account, onB, update: true)
        try c.server.start()
        var winner: String?
        XCTAssertTrue(try a.waitUntil(60) {
            let (x, y) = (try c.secret(a, service, account), try c.secret(b, service, account))
            winner = x
            return x != nil && x == y
        }, c.shown(a) + c.shown(b))
        let (winnerHost, loserHost) = winner == onA ? (a, b) : (b, a)
        let loser = winner == onA ? onB : onA
        XCTAssertTrue(try loserHost.waitUntil(60) { try kept(loserHost, service, account) == [loser] }, c.shown(loserHost))

        // history prints the id --restore takes, in text and JSON.
        let listed = try loserHost.run(["history", "-s", service, "--json"])
        let entries = (try? JSONSerialization.jsonObject(with: Data(listed.stdout.utf8))) as? [[String: Any]] ?? []
        let id = try XCTUnwrap(entries.first?["id"] as? Int, listed.stdout)
        XCTAssertTrue(try loserHost.run(["history", "-s", service]).stdout.hasPrefix("id: \(id)\n"))

        let unknown = try loserHost.run(["history", "--restore", "999999"])
        XCTAssertEqual(unknown.status, 44, "\(unknown)")
        XCTAssertTrue(unknown.stderr.contains("no version with id 999999"), unknown.stderr)
        XCTAssertEqual(try loserHost.run(["history", "--restore", "none"]).status, 2)

        XCTAssertEqual(try loserHost.run(["lock-keychain"]).status, 0)
        let locked = try loserHost.run(["history", "--restore", "\(id)"])
        XCTAssertEqual(locked.status, 36, "\(locked)")
        XCTAssertTrue(locked.stderr.contains("locked"), locked.stderr)
        XCTAssertEqual(try loserHost.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)

        let restored = try loserHost.run(["history", "--restore", "\(id)"])
        XCTAssertEqual(restored.status, 0, "\(restored)")
        XCTAssertEqual(try c.secret(loserHost, service, account), loser)
        XCTAssertTrue(try winnerHost.waitUntil(60) { try c.secret(winnerHost, service, account) == loser }, c.shown(winnerHost))
        XCTAssertEqual(try kept(winnerHost, service, account), [], "a restore is a change, not a conflict")
        XCTAssertTrue(try loserHost.run(["audit"]).stdout.contains("sync-restore"))
    }
}
