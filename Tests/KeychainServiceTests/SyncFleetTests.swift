import Foundation
import KeychainCore
import KeychainCrypto
import KeychainSync
import KeychainTestSupport
import Synchronization
import XCTest

/// PRODUCT 15 at fleet size: twenty hosts' engines in this process, run as a process that
/// syncs many vaults runs them (one pool of connections for their rounds, one LISTEN
/// connection that wakes them), in one circle on a real PostgreSQL server. What each adds,
/// changes and deletes reaches all twenty, and the server serves them all with a few backends.
final class SyncFleetTests: XCTestCase {
    var home: CLIHarness!
    var server: TestPostgres?
    let accounts = TestAccounts()
    var loops: [SyncLoop] = []
    var vaults: [Vault] = []
    let service = "fleet-\(UUID().uuidString.prefix(8))"
    let groups = ["test.keychainfs"]
    let poolLimit = 4

    override func setUpWithError() throws {
        home = try CLIHarness()
        server = try TestPostgres(base: home.dir + "/pg", accounts: accounts)
    }

    override func tearDown() {
        for loop in loops { loop.stop() }
        server?.stop()  // before its directory (inside the harness's) goes, and before its user does
        home?.tearDown()
        accounts.remove()
        super.tearDown()
    }

    /// Twenty vaults, each with its engine in a loop of its own, in one circle formed through
    /// join and approve; the loops run once every host is a member.
    func formFleet(_ count: Int) throws {
        let pg = try XCTUnwrap(server)
        let device = try DeviceKey.loadOrCreate(at: home.dir + "/device.key")
        let pass = try SecureBytes(copying: Array("fleet test passphrase".utf8))
        let connections = SyncConnections.shared(pool: SyncServerPool(limit: poolLimit, idleSeconds: 10), waker: SyncWaker())
        for i in 0..<count {
            let vault = try Vault.create(at: home.dir + "/host-\(i).vault", passphrase: pass, kdf: .minimum, deviceKey: device)
            vaults.append(vault)
            loops.append(SyncLoop(vault: vault, connections: connections, log: { _ in }, onApplied: { _, _ in }))
        }
        _ = try loops[0].engine.initCircle(conninfo: pg.conninfo, name: "fleet-0")
        for i in 1..<count {
            let code = try loops[i].engine.join(conninfo: pg.conninfo, name: "fleet-\(i)")
            XCTAssertEqual(try loops[0].engine.approve(code: code), "fleet-\(i)")
            loops[i].engine.step()
            XCTAssertEqual(loops[i].engine.status()["state"], .string("member"))
        }
        for loop in loops { Thread { loop.run() }.start() }
    }

    func add(_ account: String, on host: Int, secret: String) throws {
        try vaults[host].add([.class: .itemClass(.genericPassword), .service: .string(service), .account: .string(account),
                              .synchronizable: .bool(true)], secret: try SecureBytes(copying: Array(secret.utf8)),
                             accessGroups: groups)
        loops[host].kick()
    }

    /// The secret of the item `account` in vault `host`; nil when it holds none.
    func secret(_ account: String, on host: Int) -> String? {
        let found = try? vaults[host].copyMatching([.class: .itemClass(.genericPassword), .service: .string(service),
                                                    .account: .string(account), .synchronizable: .synchronizableAny,
                                                    .returnData: true], accessGroups: groups)
        return found?.value?.data?.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// Waits up to `seconds` until every vault holds exactly `expected` (account → secret, nil: none).
    func waitUntilEveryHost(holds expected: [String: String?], seconds: Double = 120) -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        var missing: [String] = []
        repeat {
            missing = []
            for host in vaults.indices {
                for (account, value) in expected where secret(account, on: host) != value { missing.append("host \(host): \(account)") }
            }
            if missing.isEmpty { return [] }
            Thread.sleep(forTimeInterval: 0.25)
        } while Date() < deadline
        return missing
    }

    /// A new host reads a log of several pages in one pass (a server-side cursor after the
    /// first full page): it ends with every item, a large one (read alone) included, except
    /// one whose signature the server changed, which it refuses and reports.
    func testANewHostReadsALongLogWholeAndRefusesAForgedEntryInIt() throws {
        let pg = try XCTUnwrap(server)
        // Batches of 4,096 (16,384 by default): the second, opened ahead, within 5,000 entries.
        SyncEngine.longReadBatch.store(4096, ordering: .relaxed)
        defer { SyncEngine.longReadBatch.store(16_384, ordering: .relaxed) }
        try formFleet(1)
        var batch: [(attributes: Attributes, secret: SecureBytes?)] = []
        var expected: [String: String?] = [:]
        for n in 0..<5_000 {  // a page, then batches of 4,096: the second is opened ahead
            batch.append(([.class: .itemClass(.genericPassword), .service: .string(service), .account: .string("bulk-\(n)"),
                           .synchronizable: .bool(true)], try SecureBytes(copying: Array("bulk secret \(n)".utf8))))
            expected["bulk-\(n)"] = "bulk secret \(n)"
        }
        try vaults[0].addAll(batch, accessGroups: groups)
        let large = String(repeating: "large secret ", count: 1_000)  // a record over 4 KiB
        try add("large", on: 0, secret: large)
        expected["large"] = large
        XCTAssertTrue(waitForLog(pg, atLeast: 5_001), "the first host's items did not reach the server")
        // In the second batch of the read, the one opened ahead on another thread.
        _ = try pg.psql("""
            UPDATE keychainfs.log SET record = set_byte(record, octet_length(record) - 1, get_byte(record, octet_length(record) - 1) # 1)
            WHERE seq = 4800
            """)

        let device = try DeviceKey.loadOrCreate(at: home.dir + "/device.key")
        let newcomer = try Vault.create(at: home.dir + "/new.vault", passphrase: try SecureBytes(copying: Array("p".utf8)),
                                        kdf: .minimum, deviceKey: device)
        let lines = LogLines()
        let engine = SyncEngine(vault: newcomer, log: { lines.append($0) }, onApplied: { _, _ in })
        let code = try engine.join(conninfo: pg.conninfo, name: "newcomer")
        _ = try loops[0].engine.approve(code: code)
        engine.step()  // becomes a member
        engine.step()  // reads the whole log
        vaults.append(newcomer)
        XCTAssertEqual(engine.status()["cursor"], .number(Int64(try lastPosition(pg))))
        XCTAssertTrue(lines.all.contains { $0.hasPrefix("sync: read 4501 more log entries in one pass") }, "\(lines.all)")
        XCTAssertEqual(engine.status()["rejected"], .number(1))
        XCTAssertEqual(engine.status()["last-rejection"], .string("log entry 4800: bad signature"))
        let missing = waitUntilEveryHost(holds: expected, seconds: 1)
        XCTAssertEqual(missing.count, 1, "only the forged entry's item is missing: \(missing.prefix(5))")
        XCTAssertTrue(missing.allSatisfy { $0.hasPrefix("host 1: ") }, "\(missing.prefix(5))")
    }

    func lastPosition(_ pg: TestPostgres) throws -> Int {
        Int(try pg.psql("SELECT coalesce(max(seq), 0) FROM keychainfs.log").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    func waitForLog(_ pg: TestPostgres, atLeast count: Int) -> Bool {
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            if ((try? lastPosition(pg)) ?? 0) >= count { return true }
            Thread.sleep(forTimeInterval: 0.25)
        }
        return false
    }

    func testEveryChangeOfTwentyHostsReachesAllTwenty() throws {
        let pg = try XCTUnwrap(server)
        try formFleet(20)
        var expected: [String: String?] = [:]
        for host in 0..<20 {
            for n in 0..<3 {
                let account = "h\(host)-\(n)", value = "secret \(host) \(n)"
                try add(account, on: host, secret: value)
                expected[account] = value
            }
        }
        let missing = waitUntilEveryHost(holds: expected)
        XCTAssertEqual(missing, [], "\(missing.count) items missing, first: \(missing.prefix(5))")

        // One host changes what another wrote, a third deletes one: all twenty see both.
        _ = try vaults[5].update([.class: .itemClass(.genericPassword), .service: .string(service), .account: .string("h0-0"),
                                  .synchronizable: .bool(true)], changes: [.label: .string("changed")],
                                 secret: try SecureBytes(copying: Array("changed on 5".utf8)), accessGroups: groups)
        loops[5].kick()
        _ = try vaults[7].delete([.class: .itemClass(.genericPassword), .service: .string(service), .account: .string("h1-1"),
                                  .synchronizable: .bool(true)], accessGroups: groups)
        loops[7].kick()
        expected["h0-0"] = "changed on 5"
        expected["h1-1"] = .some(nil)
        let stale = waitUntilEveryHost(holds: expected)
        XCTAssertEqual(stale, [], "\(stale.count) hosts behind, first: \(stale.prefix(5))")

        // Twenty hosts, and the server sees the pool's connections and one listener, not forty.
        let backends = Int(try pg.psql("""
            SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
            """).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        XCTAssertGreaterThan(backends, 0)
        XCTAssertLessThanOrEqual(backends, poolLimit + 1)
    }
}

/// What an engine logged, from its thread.
private final class LogLines: @unchecked Sendable {
    // Unchecked: `lines` only with `lock` held.
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
