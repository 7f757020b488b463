import Foundation
import KeychainTestSupport
import XCTest

/// Pruning of the server's log (docs/sync.md, "Pruning"): once every member read past them,
/// older versions and tombstones leave the server; a host whose vault is behind the pruned
/// position reads the whole log again and deletes only what the log says is gone.
final class SyncPruneTests: XCTestCase {
    var circle: SyncHosts?

    override func tearDown() {
        circle?.tearDown()
        super.tearDown()
    }

    /// (rows, distinct tokens, tombstones) of the server's log, and tombstones in `items`.
    func logShape(_ c: SyncHosts) throws -> [Int] {
        let row = try c.server.psql("""
            SELECT count(*), count(DISTINCT token), count(*) FILTER (WHERE deleted),
                   (SELECT count(*) FROM keychainfs.items WHERE deleted) FROM keychainfs.log
            """).trimmingCharacters(in: .whitespacesAndNewlines)
        return row.split(separator: "|").map { Int($0) ?? -1 }
    }

    func dumpedLogRows(_ c: SyncHosts) throws -> Int {
        try c.server.dump().components(separatedBy: "\n").filter { $0.hasPrefix("INSERT INTO keychainfs.log ") }.count
    }

    func delete(_ h: CLIHarness, _ service: String, _ account: String) throws {
        XCTAssertEqual(try h.run(["delete-generic-password", "-s", service, "-a", account]).status, 0)
    }

    func testAStoppedMemberHoldsPruningBackThenOneEntryPerLiveItemRemains() throws {
        let c = try SyncHosts(count: 2)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        try c.formCircle()
        let account = "acct-\(c.tag)"
        for name in ["often", "kept", "doomed"] { try c.add(a, "\(name)-\(c.tag)", account, "\(name)-0") }
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, "doomed-\(c.tag)", account) == "doomed-0" }, c.shown(b))

        // B changes an item with the server away, then stops: its cursor holds every entry
        // after it on the server, the tombstone too.
        c.server.stop()
        try c.add(b, "kept-\(c.tag)", account, "kept-on-b", update: true)
        XCTAssertEqual(try b.run(["stop"]).status, 0)
        try c.server.start()
        for i in 1...20 { try c.add(a, "often-\(c.tag)", account, "often-\(i)", update: true) }
        try delete(a, "doomed-\(c.tag)", account)
        XCTAssertTrue(try a.waitUntil(60) { try logShape(c)[2] == 1 }, "A pushed the tombstone: \((try? logShape(c)) ?? [])")
        // Updates between two rounds go as one version: at least the first and the last of
        // `often`, `kept`, and `doomed` with its tombstone, in the log and in `items`.
        let held = try logShape(c)
        XCTAssertTrue(held[0] >= 5 && held[1] == 3 && held[2] == 1 && held[3] == 1, "\(held)")
        let before = try dumpedLogRows(c)
        XCTAssertEqual(before, held[0])

        // B comes back and reads them; then the log holds one entry per live item, no tombstone.
        XCTAssertEqual(try b.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertTrue(try b.waitUntil(60) {
            try c.secret(b, "often-\(c.tag)", account) == "often-20" && c.secret(b, "doomed-\(c.tag)", account) == nil
        }, c.shown(b))
        XCTAssertTrue(try a.waitUntil(60) { try c.secret(a, "kept-\(c.tag)", account) == "kept-on-b" }, c.shown(a))
        XCTAssertEqual(try c.secret(b, "kept-\(c.tag)", account), "kept-on-b", "B's unsent change survived")
        XCTAssertTrue(try a.waitUntil(60) { try logShape(c) == [2, 2, 0, 0] }, "\((try? logShape(c)) ?? [])")
        let after = try dumpedLogRows(c)
        XCTAssertEqual(after, 2)
        print("pg_dump log rows: \(before) before the prune, \(after) after")

        // Pruned or not, both ways still work.
        try c.add(b, "later-\(c.tag)", account, "later-0")
        XCTAssertTrue(try a.waitUntil(60) { try c.secret(a, "later-\(c.tag)", account) == "later-0" }, c.shown(a))
        XCTAssertNil(c.status(a)["last-error"], c.shown(a))
    }

    /// B's vault is put back from a copy made before a delete that was since pruned: B's
    /// position is below the pruned one, so it reads the whole log, deletes the item the log no
    /// longer has, and keeps what was changed here and never sent.
    func testAVaultRestoredBehindThePrunedLogResyncsAndLosesNoUnsentChange() throws {
        let c = try SyncHosts(count: 2)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        try c.formCircle()
        let account = "acct-\(c.tag)"
        let names = ["gone", "updated", "edited", "outlived"]
        for name in names { try c.add(a, "\(name)-\(c.tag)", account, "\(name)-0") }
        XCTAssertTrue(try b.waitUntil(60) {
            try names.allSatisfy { try c.secret(b, "\($0)-\(c.tag)", account) == "\($0)-0" }
        }, c.shown(b))

        // A copy of B's vault, as a backup would be.
        XCTAssertEqual(try b.run(["stop"]).status, 0)
        let files = ["", "-wal", "-shm"].map { b.vault + $0 }.filter { FileManager.default.fileExists(atPath: $0) }
        let copies = try files.map { f -> (String, Data) in (f, try Data(contentsOf: URL(fileURLWithPath: f))) }
        XCTAssertEqual(try b.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)

        // A deletes two items and updates one; B reads it all, and the server prunes it.
        try delete(a, "gone-\(c.tag)", account)
        try delete(a, "outlived-\(c.tag)", account)
        for i in 1...5 { try c.add(a, "updated-\(c.tag)", account, "updated-\(i)", update: true) }
        XCTAssertTrue(try b.waitUntil(60) {
            try c.secret(b, "gone-\(c.tag)", account) == nil && c.secret(b, "updated-\(c.tag)", account) == "updated-5"
        }, c.shown(b))
        XCTAssertTrue(try a.waitUntil(60) { try logShape(c) == [2, 2, 0, 0] }, "\((try? logShape(c)) ?? [])")

        // B's vault goes back to the copy; with the server away, B changes two items there.
        XCTAssertEqual(try b.run(["stop"]).status, 0)
        for (f, data) in copies { try data.write(to: URL(fileURLWithPath: f)) }
        for f in ["-wal", "-shm"].map({ b.vault + $0 }) where !files.contains(f) { try? FileManager.default.removeItem(atPath: f) }
        c.server.stop()
        XCTAssertEqual(try b.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(try c.secret(b, "gone-\(c.tag)", account), "gone-0", "the copy has what it had")
        try c.add(b, "edited-\(c.tag)", account, "edited-on-b", update: true)
        try c.add(b, "outlived-\(c.tag)", account, "outlived-on-b", update: true)
        try c.add(b, "new-\(c.tag)", account, "new-on-b")
        try c.server.start()

        // B converges: the delete it missed is applied, its unsent changes survive and reach A.
        XCTAssertTrue(try b.waitUntil(90) {
            try c.secret(b, "gone-\(c.tag)", account) == nil && c.secret(b, "updated-\(c.tag)", account) == "updated-5"
        }, c.shown(b))
        XCTAssertTrue(try a.waitUntil(90) {
            try c.secret(a, "edited-\(c.tag)", account) == "edited-on-b" && c.secret(a, "new-\(c.tag)", account) == "new-on-b"
                && c.secret(a, "outlived-\(c.tag)", account) == "outlived-on-b"
        }, c.shown(a))
        XCTAssertEqual(try c.secret(b, "edited-\(c.tag)", account), "edited-on-b")
        XCTAssertEqual(try c.secret(b, "outlived-\(c.tag)", account), "outlived-on-b", "a change here outlives a pruned delete")
        let kept = try b.run(["history", "-s", "outlived-\(c.tag)", "-w"])
        XCTAssertEqual(kept.stdout, "outlived-on-b\n", "and is recorded in the history: \(kept)")
        XCTAssertTrue(try b.run(["history", "-s", "outlived-\(c.tag)"]).stdout.contains("reason: missed-delete"))
        XCTAssertNil(try c.secret(a, "gone-\(c.tag)", account))
        XCTAssertTrue(a.waitUntil(60) { c.status(a)["last-error"] == nil && c.status(b)["last-error"] == nil }, c.shown(b))
    }

    /// B never applied A's delete of an item (as when it refuses a tombstone), and the server
    /// pruned the tombstone and the item's row: B's later change of the item names a version
    /// the server no longer has. It goes as a new item, as a full resync would send it, and A
    /// gets the item back; it does not lose the compare-and-swap round after round.
    func testAChangeToAnItemWhosePrunedTombstoneWasNeverAppliedHereGoesAsANewItem() throws {
        let c = try SyncHosts(count: 2)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        try c.formCircle()
        let (service, account) = ("refused-\(c.tag)", "acct-\(c.tag)")
        try c.add(a, service, account, "first")
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, service, account) == "first" }, c.shown(b))

        // B is away while A deletes the item; the tombstone and the item's row then leave the
        // server without B reading them, and without moving the pruned position (which would
        // make B read the whole log again and apply the delete).
        XCTAssertEqual(try b.run(["stop"]).status, 0)
        try delete(a, service, account)
        XCTAssertTrue(try a.waitUntil(60) { try logShape(c)[2] == 1 }, "A pushed the tombstone: \((try? logShape(c)) ?? [])")
        _ = try c.server.psql("""
            DELETE FROM keychainfs.log WHERE token IN (SELECT token FROM keychainfs.items WHERE deleted);
            DELETE FROM keychainfs.items WHERE deleted
            """)
        XCTAssertEqual(try logShape(c), [0, 0, 0, 0])
        XCTAssertEqual(try b.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)

        try c.add(b, service, account, "changed-on-b", update: true)
        XCTAssertTrue(try a.waitUntil(60) { try c.secret(a, service, account) == "changed-on-b" }, c.shown(b))
        XCTAssertEqual(try logShape(c), [1, 1, 0, 0], "one new row and one entry, no tombstone")
        XCTAssertEqual(try c.server.psql("SELECT version FROM keychainfs.items").trimmingCharacters(in: .whitespacesAndNewlines), "1")

        // In step from then on: a change of either host reaches the other.
        try c.add(a, service, account, "changed-on-a", update: true)
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, service, account) == "changed-on-a" }, c.shown(b))
        XCTAssertEqual(c.status(b)["conflicts"] as? Int, 0, c.shown(b))
        XCTAssertNil(c.status(b)["last-error"], c.shown(b))
    }

    /// A member unseen for longer than the circle's retention (`sync set --retention`, its
    /// `seen_at` put back in SQL) holds nothing back: the log is pruned past it, tombstones too.
    /// When it returns it reads the whole log: the delete it missed applies, and the changes it
    /// made while away and never sent are kept and reach the other host.
    func testAMemberUnseenPastTheRetentionNoLongerHoldsPruningBackAndResyncsOnReturn() throws {
        let c = try SyncHosts(count: 2)
        circle = c
        let (a, b) = (c.hosts[0], c.hosts[1])
        try c.formCircle()
        let account = "acct-\(c.tag)"
        let names = ["kept", "edited", "doomed", "outlived"]
        for name in names { try c.add(a, "\(name)-\(c.tag)", account, "\(name)-0") }
        XCTAssertTrue(try b.waitUntil(60) {
            try names.allSatisfy { try c.secret(b, "\($0)-\(c.tag)", account) == "\($0)-0" }
        }, c.shown(b))

        // Any member sets the circle's retention; every member sees it.
        for bad in ["0", "-3", "ten", "36501"] {
            XCTAssertEqual(try b.run(["sync", "set", "--retention", bad]).status, 2, "--retention \(bad)")
        }
        XCTAssertEqual(try b.run(["sync", "set"]).status, 2)
        let set = try b.run(["sync", "set", "--retention", "7", "--json"])
        XCTAssertEqual(set.status, 0, "\(set)")
        XCTAssertEqual(b.jsonObject(set.stdout)["retention-days"] as? Int, 7, set.stdout)
        XCTAssertTrue(a.waitUntil(60) { c.status(a)["retention-days"] as? Int == 7 }, c.shown(a))
        let hostB = try XCTUnwrap(c.status(b)["host"] as? String)

        // B changes two items with the server away, then stops: never sent.
        c.server.stop()
        try c.add(b, "edited-\(c.tag)", account, "edited-on-b", update: true)
        try c.add(b, "outlived-\(c.tag)", account, "outlived-on-b", update: true)
        XCTAssertEqual(try b.run(["stop"]).status, 0)
        try c.server.start()
        try delete(a, "doomed-\(c.tag)", account)
        try delete(a, "outlived-\(c.tag)", account)
        XCTAssertTrue(try a.waitUntil(60) { try logShape(c)[2] == 2 }, "A pushed the tombstones: \((try? logShape(c)) ?? [])")
        XCTAssertEqual(try logShape(c)[3], 2, "B's cursor holds them")

        // B was last seen 8 days ago: past the retention, A prunes past it.
        _ = try c.server.psql("UPDATE keychainfs.hosts SET seen_at = now() - interval '8 days' WHERE host = decode('\(hostB)', 'hex')")
        XCTAssertTrue(try a.waitUntil(60) { try logShape(c) == [2, 2, 0, 0] }, "\((try? logShape(c)) ?? [])")

        // B returns: below the pruned position, it reads the whole log.
        XCTAssertEqual(try b.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertTrue(try b.waitUntil(90) { try c.secret(b, "doomed-\(c.tag)", account) == nil }, c.shown(b))
        XCTAssertTrue(try a.waitUntil(90) {
            try c.secret(a, "edited-\(c.tag)", account) == "edited-on-b" && c.secret(a, "outlived-\(c.tag)", account) == "outlived-on-b"
        }, c.shown(a) + c.shown(b))
        XCTAssertEqual(try c.secret(b, "edited-\(c.tag)", account), "edited-on-b")
        XCTAssertEqual(try c.secret(b, "outlived-\(c.tag)", account), "outlived-on-b", "a change here outlives a pruned delete")
        XCTAssertEqual(try c.secret(b, "kept-\(c.tag)", account), "kept-0")
        XCTAssertTrue(try b.run(["history", "-s", "outlived-\(c.tag)"]).stdout.contains("reason: missed-delete"))
        // Seen again: it holds pruning back as any member does.
        let seenDays = try c.server.psql("""
            SELECT extract(day FROM now() - seen_at)::int FROM keychainfs.hosts WHERE host = decode('\(hostB)', 'hex')
            """).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(seenDays, "0")
        XCTAssertTrue(a.waitUntil(60) { c.status(a)["last-error"] == nil && c.status(b)["last-error"] == nil }, c.shown(b))
    }

    /// A server made before the retention: a host adds the column (30 days for every circle)
    /// when it connects again, and `sync set` works on it.
    func testAServerWithoutTheRetentionColumnGetsItAtTheNextConnection() throws {
        let c = try SyncHosts(count: 1)
        circle = c
        let a = c.hosts[0]
        try c.found()
        let column = "SELECT count(*) FROM pg_attribute WHERE attrelid = 'keychainfs.circles'::regclass AND attname = 'retention_days'"
        _ = try c.server.psql("ALTER TABLE keychainfs.circles DROP COLUMN retention_days")
        c.server.stop()
        try c.server.start()
        XCTAssertTrue(try a.waitUntil(60) { try c.server.psql(column).hasPrefix("1") }, c.shown(a))
        XCTAssertEqual(try c.server.psql("SELECT retention_days FROM keychainfs.circles"), "30\n")
        XCTAssertEqual(try a.run(["sync", "set", "--retention", "9"]).status, 0)
        XCTAssertEqual(try c.server.psql("SELECT retention_days FROM keychainfs.circles"), "9\n")
        XCTAssertTrue(a.waitUntil(60) { c.status(a)["last-error"] == nil }, c.shown(a))
    }

    /// A removed host has no cursor on the server: it holds nothing back, nor does a host
    /// that joins after a prune, which reads what is left of the log.
    func testARemovedHostDoesNotHoldPruningBackAndANewHostReadsWhatIsLeft() throws {
        let c = try SyncHosts(count: 3)
        circle = c
        let (a, b, gone) = (c.hosts[0], c.hosts[1], c.hosts[2])
        try c.found()
        try c.join(2)
        let account = "acct-\(c.tag)"
        for name in ["live", "doomed"] { try c.add(a, "\(name)-\(c.tag)", account, "\(name)-0") }
        XCTAssertTrue(try gone.waitUntil(60) { try c.secret(gone, "doomed-\(c.tag)", account) == "doomed-0" }, c.shown(gone))
        XCTAssertEqual(try gone.run(["stop"]).status, 0)
        XCTAssertEqual(try a.run(["sync", "remove", c.name(2)]).status, 0)

        for i in 1...5 { try c.add(a, "live-\(c.tag)", account, "live-\(i)", update: true) }
        try delete(a, "doomed-\(c.tag)", account)
        XCTAssertTrue(try a.waitUntil(60) { try logShape(c) == [1, 1, 0, 0] }, "\((try? logShape(c)) ?? [])")

        try c.join(1)
        XCTAssertTrue(try b.waitUntil(60) { try c.secret(b, "live-\(c.tag)", account) == "live-5" }, c.shown(b))
        XCTAssertNil(try c.secret(b, "doomed-\(c.tag)", account))
        try c.add(b, "from-b-\(c.tag)", account, "from-b-0")
        XCTAssertTrue(try a.waitUntil(60) { try c.secret(a, "from-b-\(c.tag)", account) == "from-b-0" }, c.shown(a))
    }
}
