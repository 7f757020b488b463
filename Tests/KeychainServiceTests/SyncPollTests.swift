import Foundation
import KeychainTestSupport
import XCTest

/// Hosts that poll (`sync init|join|set --poll SECONDS`) instead of holding a LISTEN connection,
/// so that a fleet of separate machines can reach PostgreSQL through PgBouncer in transaction
/// mode: the server then holds the pooler's few connections however many hosts there are.
/// Three real daemons through a real PgBouncer (docs/sync.md, "Connections").
final class SyncPollTests: XCTestCase {
    var circle: SyncHosts?
    let poolSize = 2

    override func tearDown() {
        circle?.tearDown()
        super.tearDown()
    }

    func testHostsThatPollThroughAPoolerConvergeOnThePoolersConnections() throws {
        let c = try SyncHosts(count: 3)
        circle = c
        try c.server.startPooler(poolSize: poolSize)
        try c.server.logStatements()
        c.viaPooler = true
        c.circleOptions = ["--poll", "0.5"]
        try c.formCircle()
        for h in c.hosts {
            XCTAssertEqual(c.status(h)["poll-ms"] as? Int, 500, c.shown(h))
        }
        // Every host's change reaches the others, with no notification to wake them.
        let service = "polled-\(c.tag)"
        for (i, h) in c.hosts.enumerated() { try c.add(h, service, "from-\(i)", "secret \(i)") }
        for h in c.hosts {
            XCTAssertTrue(try h.waitUntil(30) {
                try (0..<3).allSatisfy { try c.secret(h, service, "from-\($0)") == "secret \($0)" }
            }, c.shown(h))
        }
        try c.add(c.hosts[1], service, "from-0", "changed on 1", update: true)
        XCTAssertTrue(try c.hosts[2].waitUntil(30) { try c.secret(c.hosts[2], service, "from-0") == "changed on 1" })
        // Three daemons, each with its round's connection to the pooler: the server sees the
        // pooler's connections only, none of them listening.
        XCTAssertLessThanOrEqual(try c.server.backends(), poolSize)
        XCTAssertEqual(c.server.statements(containing: "LISTEN"), [], "a polling host sends no LISTEN")
        XCTAssertFalse(c.server.statements(containing: "keychainfs.log").isEmpty, "the rounds' statements are logged")
    }

    func testPollIsSetAndShownAndBadValuesAreRefused() throws {
        let c = try SyncHosts(count: 1)
        circle = c
        let h = c.hosts[0]
        XCTAssertEqual(try h.run(["sync", "set", "--poll", "5"]).status, 206, "outside a circle: errSecParam")
        try c.found()
        XCTAssertEqual(c.status(h)["poll-ms"] as? Int, 0, "it listens by default")
        for bad in ["-1", "3601", "0.05", "1.2345", "soon", "", ".5", "1.", "1e3"] {
            let r = try h.run(["sync", "set", "--poll", bad])
            XCTAssertEqual(r.status, 2, "--poll \(bad): \(r)")
        }
        let missing = try h.run(["sync", "set"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.stderr.contains("--retention DAYS or --poll SECONDS"), missing.stderr)
        XCTAssertEqual(try h.run(["sync", "status", "--poll", "3"]).status, 2)
        let set = try h.run(["sync", "set", "--poll", "2.5", "--json"])
        XCTAssertEqual(set.status, 0, "\(set)")
        XCTAssertEqual(h.jsonObject(set.stdout)["poll-ms"] as? Int, 2_500, set.stdout)
        // Kept in the vault: the same after the daemon starts again.
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(c.status(h)["poll-ms"] as? Int, 2_500)
        XCTAssertEqual(try h.run(["sync", "set", "--poll", "3600"]).status, 0)
        XCTAssertEqual(c.status(h)["poll-ms"] as? Int, 3_600_000)
        XCTAssertEqual(try h.run(["sync", "set", "--poll", "0"]).status, 0)
        XCTAssertEqual(c.status(h)["poll-ms"] as? Int, 0)
        // Listening again, the state is written as before polling existed, and still reads.
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(c.status(h)["poll-ms"] as? Int, 0)
        XCTAssertEqual(c.status(h)["state"] as? String, "member")
        XCTAssertTrue(try h.run(["audit"]).stdout.contains("poll-ms=2500"), "the change is audited")
    }
}
