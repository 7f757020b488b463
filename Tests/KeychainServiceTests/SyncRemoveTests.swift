import Foundation
import KeychainTestSupport
import XCTest

/// `sync remove HOST` (PRODUCT 15, "a removed host receives nothing new"): a new epoch whose
/// circle key reaches the remaining members only. The removed host still reads the server's
/// log, but cannot open what is written after, and says so in `sync status`.
final class SyncRemoveTests: XCTestCase {
    var circle: SyncHosts?

    override func tearDown() {
        circle?.tearDown()
        super.tearDown()
    }

    func testARemovedHostCannotOpenWhatIsWrittenAfter() throws {
        let c = try SyncHosts(count: 3)
        circle = c
        let (a, b, gone) = (c.hosts[0], c.hosts[1], c.hosts[2])
        try c.formCircle()
        let account = "acct-\(c.tag)"
        let before = "before-\(c.tag)", after = "after-\(c.tag)", fromB = "from-b-\(c.tag)"
        try c.add(a, before, account, "old-secret-\(c.tag)")
        XCTAssertTrue(try gone.waitUntil(60) { try c.secret(gone, before, account) == "old-secret-\(c.tag)" }, c.shown(gone))

        XCTAssertEqual(try a.run(["sync", "remove", "no-such-host-\(c.tag)"]).status, 44, "an unknown name removes nobody")
        let removed = try a.run(["sync", "remove", c.name(2)])
        XCTAssertEqual(removed.status, 0, "\(removed)")
        XCTAssertEqual(removed.stdout, "removed \(c.name(2))\n")
        XCTAssertEqual(c.status(a)["epoch"] as? Int, 2)
        XCTAssertFalse((c.status(a)["members"] as? String ?? "").contains(c.name(2)), c.shown(a))

        let rejectedBefore = c.status(gone)["rejected"] as? Int ?? -1
        try c.add(a, after, account, "new-secret-\(c.tag)")
        try c.add(a, before, account, "changed-secret-\(c.tag)", update: true)
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, after, account) == "new-secret-\(c.tag)" }, c.shown(b))
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, before, account) == "changed-secret-\(c.tag)" }, c.shown(b))
        XCTAssertEqual(c.status(b)["epoch"] as? Int, 2, c.shown(b))
        // The remaining members still hear each other under the new key.
        try c.add(b, fromB, account, "b-secret-\(c.tag)")
        XCTAssertTrue(try a.waitUntil(60) { try c.secret(a, fromB, account) == "b-secret-\(c.tag)" }, c.shown(a))

        // The removed host read every entry of the log (its cursor is at the end) and opened
        // none written after its removal: each is counted and named.
        let end = try c.lastLogPosition()
        XCTAssertTrue(gone.waitUntil(60) { c.status(gone)["cursor"] as? Int == end }, c.shown(gone) + " log ends at \(end)")
        let status = c.status(gone)
        XCTAssertEqual(status["rejected"] as? Int, rejectedBefore + 3, c.shown(gone))
        XCTAssertTrue((status["last-rejection"] as? String ?? "").contains("unknown circle epoch"), c.shown(gone))
        XCTAssertEqual(status["epoch"] as? Int, 1)
        XCTAssertNil(try c.secret(gone, after, account))
        XCTAssertNil(try c.secret(gone, fromB, account))
        XCTAssertEqual(try c.secret(gone, before, account), "old-secret-\(c.tag)", "what it had before stays")

        // Every record after the removal is of the new epoch (bytes 6..<10 of a record).
        let epochs = try c.server.psql("""
            SELECT DISTINCT get_byte(record, 9) FROM keychainfs.log WHERE seq > (SELECT max(seq) FROM keychainfs.epochs)
            """)
        XCTAssertEqual(epochs.trimmingCharacters(in: .whitespacesAndNewlines), "2")
    }

    func testAJoinerAfterARemovalReadsTheWholeLog() throws {
        let c = try SyncHosts(count: 3)
        circle = c
        let (a, gone, late) = (c.hosts[0], c.hosts[1], c.hosts[2])
        try c.found()
        try c.join(1)
        let account = "acct-\(c.tag)"
        try c.add(gone, "by-gone-\(c.tag)", account, "gone-secret-\(c.tag)")
        XCTAssertTrue(try a.waitUntil(60) { try c.secret(a, "by-gone-\(c.tag)", account) != nil }, c.shown(a))
        let removed = try a.run(["sync", "remove", String((c.status(gone)["host"] as? String ?? "").prefix(12))])
        XCTAssertEqual(removed.status, 0, "\(removed)")
        try c.add(a, "by-a-\(c.tag)", account, "a-secret-\(c.tag)")
        // A host that joins later gets both epochs' keys: the removed host's writes from before
        // its removal are read, and the new epoch's.
        try c.join(2)
        XCTAssertTrue(try late.waitUntil(60) { try c.secret(late, "by-a-\(c.tag)", account) == "a-secret-\(c.tag)" }, c.shown(late))
        XCTAssertEqual(try c.secret(late, "by-gone-\(c.tag)", account), "gone-secret-\(c.tag)", c.shown(late))
        XCTAssertEqual(c.status(late)["rejected"] as? Int, 0, c.shown(late))
    }
}
