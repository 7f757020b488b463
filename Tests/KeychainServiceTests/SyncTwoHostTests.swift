import Foundation
import KeychainTestSupport
import XCTest

/// PRODUCT 15: two hosts (two vaults, two device keys, two daemons) in one circle on a real
/// PostgreSQL server. What one host adds, changes and deletes with sync=1 reaches the other;
/// nothing else leaves; the server holds no name or secret; a forged record is refused.
final class SyncTwoHostTests: XCTestCase {
    var a: CLIHarness!
    var b: CLIHarness!
    var server: TestPostgres?
    let accounts = TestAccounts()
    let tag = String(UUID().uuidString.prefix(8)).lowercased()

    override func setUpWithError() throws {
        a = try CLIHarness()
        b = try CLIHarness()
        try a.createVault()
        try b.createVault()
        server = try TestPostgres(base: a.dir + "/pg", accounts: accounts)
    }

    override func tearDown() {
        server?.stop()  // before its directory (inside A's) goes, and before its user does
        a?.tearDown()
        b?.tearDown()
        accounts.remove()
        super.tearDown()
    }

    /// `sync status --json` of a host.
    func status(_ h: CLIHarness) throws -> [String: Any] {
        let r = try h.run(["sync", "status", "--json"])
        XCTAssertEqual(r.status, 0, "\(r)")
        return h.jsonObject(r.stdout)
    }

    /// `sync status` for a failure message.
    func shown(_ h: CLIHarness) -> String { (try? h.run(["sync", "status", "--json"]).stdout) ?? "?" }

    /// The secret of a generic password as `find-generic-password -w` prints it; nil when not found.
    func secret(_ h: CLIHarness, _ service: String, _ account: String) throws -> String? {
        let r = try h.run(["find-generic-password", "-s", service, "-a", account, "-w"])
        guard r.status == 0 else { return nil }
        return r.stdout.hasSuffix("\n") ? String(r.stdout.dropLast()) : r.stdout
    }

    /// Founds a circle on A and brings B in through join and approve.
    func formCircle() throws {
        let pg = try XCTUnwrap(server)
        let founded = try a.run(["sync", "init", "--server", pg.conninfo, "--name", "host-a-\(tag)"])
        XCTAssertEqual(founded.status, 0, "\(founded)")
        let joined = try b.run(["sync", "join", "--server-file", "-", "--name", "host-b-\(tag)"], input: pg.conninfo + "\n")
        XCTAssertEqual(joined.status, 0, "\(joined)")
        let code = joined.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(code.count, 11, "a code of ten characters: \(joined)")
        XCTAssertEqual(try status(b)["state"] as? String, "joining")
        // A wrong code admits nobody.
        XCTAssertEqual(try a.run(["sync", "approve", "00000-00000"]).status, 44)
        let approved = try a.run(["sync", "approve", code.lowercased()])
        XCTAssertEqual(approved.status, 0, "\(approved)")
        XCTAssertEqual(approved.stdout, "approved host-b-\(tag)\n")
        XCTAssertTrue(try b.waitUntil(60) { try status(b)["state"] as? String == "member" }, shown(b))
        XCTAssertEqual(try status(a)["circle"] as? String, try status(b)["circle"] as? String)
    }

    func testAddUpdateDeletePropagateAndNothingElseLeaves() throws {
        try formCircle()
        let service = "svc-\(tag)", account = "acct-\(tag)", label = "label-\(tag)"
        let secret1 = "first-secret-\(tag)", secret2 = "second-secret-\(tag)"
        XCTAssertEqual(try a.run(["add-generic-password", "-s", service, "-a", account, "-l", label, "-w", secret1,
                                  "--synchronizable"]).status, 0)
        // Stays on A: not synchronizable, and a ThisDeviceOnly item.
        let local = "local-\(tag)", device = "device-\(tag)", localSecret = "local-secret-\(tag)"
        XCTAssertEqual(try a.run(["add-generic-password", "-s", local, "-a", account, "-w", localSecret]).status, 0)
        XCTAssertEqual(try a.run(["add-generic-password", "-s", device, "-a", account, "-w", localSecret,
                                  "--accessible", "WhenUnlockedThisDeviceOnly"]).status, 0)

        XCTAssertTrue(try b.waitUntil(60) { try secret(b, service, account) == secret1 }, shown(b))
        let found = try b.run(["find-generic-password", "-s", service, "-a", account, "--json"])
        XCTAssertTrue(found.stdout.contains(label), "the label came along: \(found)")

        XCTAssertEqual(try a.run(["add-generic-password", "-U", "-s", service, "-a", account, "-w", secret2,
                                  "--synchronizable"]).status, 0)
        XCTAssertTrue(try b.waitUntil(60) { try secret(b, service, account) == secret2 }, shown(b))

        // B's own change goes the other way.
        let fromB = "from-b-\(tag)"
        XCTAssertEqual(try b.run(["add-generic-password", "-s", fromB, "-a", account, "-w", secret1, "--synchronizable"]).status, 0)
        XCTAssertTrue(try a.waitUntil(60) { try secret(a, fromB, account) == secret1 }, shown(a))

        XCTAssertEqual(try a.run(["delete-generic-password", "-s", service, "-a", account]).status, 0)
        XCTAssertTrue(try b.waitUntil(60) { try secret(b, service, account) == nil }, shown(b))

        // Rounds have run on both since the local items were added: they never left A.
        XCTAssertNil(try secret(b, local, account))
        XCTAssertNil(try secret(b, device, account))
        let dump = try XCTUnwrap(server).dump()
        XCTAssertTrue(dump.contains("keychainfs.log"), "the dump holds the tables")
        for needle in [service, account, label, secret1, secret2, local, device, localSecret, fromB, "host-a-\(tag)", "host-b-\(tag)"] {
            XCTAssertFalse(dump.contains(needle), "\(needle) is on the server")
            XCTAssertFalse(dump.contains(hardeningHex(Array(needle.utf8))), "\(needle) is on the server, in hex")
        }
    }

    func testAForgedRecordIsRefusedAndReported() throws {
        try formCircle()
        let service = "forge-\(tag)", account = "acct-\(tag)", secret1 = "real-secret-\(tag)"
        XCTAssertEqual(try a.run(["add-generic-password", "-s", service, "-a", account, "-w", secret1,
                                  "--synchronizable"]).status, 0)
        XCTAssertTrue(try b.waitUntil(60) { try secret(b, service, account) == secret1 })
        XCTAssertEqual(try status(b)["rejected"] as? Int, 0)
        // The server appends a copy of that record with one byte of its ciphertext changed,
        // in a later place of the log, and announces it.
        _ = try XCTUnwrap(server).psql("""
            WITH c AS (UPDATE keychainfs.circles SET seq = seq + 1 RETURNING circle, seq)
            INSERT INTO keychainfs.log(circle, seq, token, version, deleted, record)
            SELECT c.circle, c.seq, l.token, l.version + 1, l.deleted,
                   set_byte(set_byte(l.record, 130, 255 - get_byte(l.record, 130)), 49, get_byte(l.record, 49) + 1)
            FROM c, keychainfs.log l WHERE l.circle = c.circle ORDER BY l.seq DESC LIMIT 1;
            """)
        XCTAssertTrue(try b.waitUntil(60) { try status(b)["rejected"] as? Int == 1 },
                      shown(b) + ((try? server!.psql("SELECT seq, version, deleted, length(record) FROM keychainfs.log")) ?? ""))
        let why = try status(b)["last-rejection"] as? String ?? ""
        XCTAssertTrue(why.contains("bad signature"), why)
        XCTAssertEqual(try secret(b, service, account), secret1, "the forged version was not applied")
    }

    /// The daemon's log of a host (the CLI started its daemon in the background).
    func daemonLog(_ h: CLIHarness) -> String {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: h.runtimeDir)) ?? []
        return files.filter { $0.hasSuffix(".log") }
            .compactMap { try? String(contentsOfFile: h.runtimeDir + "/" + $0, encoding: .utf8) }.joined()
    }

    /// A record longer than any host writes (SyncRecord.maximumLength, 32 MiB and 4 KiB) is
    /// never fetched: it counts as a rejection, one log line names its position and length (no
    /// byte of it), and the entries after it still arrive.
    func testARecordLongerThanAnyHostWritesIsCountedAndLoggedAndPassed() throws {
        try formCircle()
        let account = "acct-\(tag)", first = "before-\(tag)", second = "after-\(tag)"
        XCTAssertEqual(try a.run(["add-generic-password", "-s", first, "-a", account, "-w", "s1", "--synchronizable"]).status, 0)
        XCTAssertTrue(try b.waitUntil(60) { try secret(b, first, account) == "s1" }, shown(b))
        XCTAssertEqual(try status(b)["rejected"] as? Int, 0)
        let length = 32 << 20 + 4096 + 1
        let seq = try XCTUnwrap(server).psql("""
            WITH c AS (UPDATE keychainfs.circles SET seq = seq + 1 RETURNING circle, seq)
            INSERT INTO keychainfs.log(circle, seq, token, version, deleted, record)
            SELECT c.circle, c.seq, l.token, l.version + 1, l.deleted, l.record || repeat('Z', \(length) - length(l.record))::bytea
            FROM c, keychainfs.log l WHERE l.circle = c.circle ORDER BY l.seq DESC LIMIT 1 RETURNING seq;
            """).split(separator: "\n").first.map(String.init) ?? ""  // then psql's "INSERT 0 1"
        XCTAssertEqual(try server?.psql("SELECT max(length(record)) FROM keychainfs.log").trimmingCharacters(in: .whitespacesAndNewlines),
                       "\(length)")
        XCTAssertEqual(try a.run(["add-generic-password", "-s", second, "-a", account, "-w", "s2", "--synchronizable"]).status, 0)
        XCTAssertTrue(try b.waitUntil(60) { try secret(b, second, account) == "s2" }, "the entry after it arrives: " + shown(b))
        XCTAssertTrue(try b.waitUntil(60) { try status(b)["rejected"] as? Int == 1 }, shown(b))
        let why = try status(b)["last-rejection"] as? String ?? ""
        XCTAssertEqual(why, "log entry \(seq): record of \(length) bytes, longer than any host writes (\(32 << 20 + 4096))")
        let lines = daemonLog(b).split(separator: "\n").filter { $0.contains("log entry \(seq)") }
        XCTAssertEqual(lines.count, 1, "one line: \(lines); the log: \(daemonLog(b))")
        XCTAssertTrue(lines.first?.contains("sync: rejected log entry \(seq): record of \(length) bytes") == true, "\(lines)")
        XCTAssertFalse(daemonLog(b).contains("ZZZZ"), "no byte of the record in the log")
        XCTAssertEqual(try secret(b, first, account), "s1", "the version it claimed to be was not applied")
    }
}
