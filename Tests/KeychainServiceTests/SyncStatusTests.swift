import Foundation
import KeychainTestSupport
import XCTest

/// `sync status` counts what the rounds did since the host joined, not since its daemon
/// started: the counters are kept in the vault (docs/sync.md, "Local state").
final class SyncStatusTests: XCTestCase {
    var circle: SyncHosts?

    override func tearDown() {
        circle?.tearDown()
        super.tearDown()
    }

    /// The counters of `sync status --json`.
    func counters(_ c: SyncHosts, _ h: CLIHarness) -> [String: Int] {
        let s = c.status(h)
        var out: [String: Int] = [:]
        for key in ["pushed", "pulled", "rejected", "conflicts"] { out[key] = s[key] as? Int ?? -1 }
        return out
    }

    func testCountersSurviveARestartOfTheDaemon() throws {
        let c = try SyncHosts(count: 2)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        try c.formCircle()
        let account = "acct-\(c.tag)"
        for i in 1...3 { try c.add(a, "counted-\(i)-\(c.tag)", account, "secret-\(i)") }
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, "counted-3-\(c.tag)", account) == "secret-3" }, c.shown(b))
        XCTAssertTrue(a.waitUntil(60) { (counters(c, a)["pushed"] ?? 0) >= 3 && (counters(c, b)["pulled"] ?? 0) >= 3 },
                      c.shown(a) + c.shown(b))
        let before = (a: counters(c, a), b: counters(c, b))

        for h in [a, b] {
            XCTAssertEqual(try h.run(["stop"]).status, 0)
            XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        }
        XCTAssertEqual(counters(c, a), before.a, c.shown(a))
        XCTAssertEqual(counters(c, b), before.b, c.shown(b))

        // And they go on counting from there.
        try c.add(a, "later-\(c.tag)", account, "later")
        XCTAssertTrue(b.waitUntil(60) { (counters(c, b)["pulled"] ?? 0) > before.b["pulled"]! }, c.shown(b))
    }
}
