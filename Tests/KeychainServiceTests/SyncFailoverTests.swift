import Foundation
import KeychainTestSupport
import XCTest

/// Issue 17: a libpq multi-host connection string (`target_session_attrs=read-write`) survives
/// the primary's loss: the primary is killed, its synchronous standby promoted, and sync
/// resumes without losing a change the primary acknowledged.
final class SyncFailoverTests: XCTestCase {
    var circle: SyncHosts?

    override func tearDown() {
        circle?.tearDown()
        super.tearDown()
    }

    func testAPromotedStandbyKeepsEveryAcknowledgedChangeAndSyncResumes() throws {
        let c = try SyncHosts(count: 2, failover: true)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        try c.formCircle()
        let account = "acct-\(c.tag)"
        try c.add(a, "before-\(c.tag)", account, "before-secret-\(c.tag)")
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, "before-\(c.tag)", account) != nil }, c.shown(b))

        // B is away; A's change is acknowledged by the primary (A recorded it as pushed), then
        // the primary dies and the standby takes over.
        XCTAssertEqual(try b.run(["stop"]).status, 0)
        let pushed = c.status(a)["pushed"] as? Int ?? -1
        try c.add(a, "acked-\(c.tag)", account, "acked-secret-\(c.tag)")
        XCTAssertTrue(a.waitUntil(60) { (c.status(a)["pushed"] as? Int ?? -1) > pushed }, c.shown(a))
        c.server.stopPrimary()
        try c.server.promoteStandby()

        // B comes back and gets the acknowledged change from the promoted standby; both ways work.
        XCTAssertEqual(try b.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertTrue(try b.waitUntil(90) { try c.secret(b, "acked-\(c.tag)", account) == "acked-secret-\(c.tag)" }, c.shown(b))
        try c.add(b, "after-\(c.tag)", account, "after-secret-\(c.tag)")
        XCTAssertTrue(try a.waitUntil(90) { try c.secret(a, "after-\(c.tag)", account) == "after-secret-\(c.tag)" }, c.shown(a))
        XCTAssertTrue(a.waitUntil(60) { c.status(a)["last-error"] == nil }, c.shown(a))
        XCTAssertEqual(try c.secret(b, "before-\(c.tag)", account), "before-secret-\(c.tag)")
    }
}
