import Foundation
import XCTest

/// Hosts of a sync circle for one test: each a vault with its own device key and daemon,
/// all on one real PostgreSQL server (`TestPostgres`). Everything goes in `tearDown`.
package final class SyncHosts {
    package let hosts: [CLIHarness]
    package let server: TestPostgres
    package let accounts = TestAccounts()
    package let tag = String(UUID().uuidString.prefix(8)).lowercased()

    /// What the hosts connect with: the server's Unix socket, or its TCP address when it has one;
    /// PgBouncer's socket once `viaPooler` is set (`TestPostgres.startPooler`).
    package var conninfo: String {
        if viaPooler { return server.poolerConninfo }
        return failover ? server.failoverConninfo : server.tcpConninfo ?? server.conninfo
    }
    package var viaPooler = false
    /// Extra arguments of every host's `sync init` and `sync join` (`--poll 1`, say).
    package var circleOptions: [String] = []
    /// A synchronous standby beside the server, and both in the connection string.
    package let failover: Bool

    package init(count: Int, tcp: (address: String, port: Int, network: String)? = nil, failover: Bool = false) throws {
        self.failover = failover
        var made: [CLIHarness] = []
        var started: TestPostgres?
        do {
            for _ in 0..<count {
                let h = try CLIHarness()
                made.append(h)
                // Mounts need the runtime directory reachable by the mount's users.
                try FileManager.default.createDirectory(atPath: h.runtimeDir, withIntermediateDirectories: true)
                chmod(h.runtimeDir, 0o755)
                try h.createVault()
            }
            let s = try TestPostgres(base: made[0].dir + "/pg", accounts: accounts, tcp: tcp, synchronousStandby: failover)
            started = s
            if failover { try s.startStandby() }
            server = s
        } catch {
            started?.stop()
            for h in made { h.tearDown() }
            accounts.remove()
            throw error
        }
        hosts = made
    }

    package func tearDown() {
        server.stop()  // before its directory (inside the first host's) goes, and before its user does
        for h in hosts { h.tearDown() }
        accounts.remove()
    }

    package func name(_ i: Int) -> String { "host-\(i)-\(tag)" }

    /// `sync status --json` of a host; an empty object when it fails.
    package func status(_ h: CLIHarness) -> [String: Any] {
        guard let r = try? h.run(["sync", "status", "--json"]), r.status == 0 else { return [:] }
        return h.jsonObject(r.stdout)
    }

    /// `sync status` for a failure message.
    package func shown(_ h: CLIHarness) -> String { (try? h.run(["sync", "status", "--json"]).stdout) ?? "?" }

    /// The secret of a generic password as `find-generic-password -w` prints it; nil when not found.
    package func secret(_ h: CLIHarness, _ service: String, _ account: String) throws -> String? {
        let r = try h.run(["find-generic-password", "-s", service, "-a", account, "-w"])
        guard r.status == 0 else { return nil }
        return r.stdout.hasSuffix("\n") ? String(r.stdout.dropLast()) : r.stdout
    }

    /// Adds a synchronizable generic password (`-U` updates it).
    package func add(_ h: CLIHarness, _ service: String, _ account: String, _ secret: String, update: Bool = false,
             file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try h.run(["add-generic-password"] + (update ? ["-U"] : []) +
                          ["-s", service, "-a", account, "-w", secret, "--synchronizable"])
        XCTAssertEqual(r.status, 0, "\(r)", file: file, line: line)
    }

    /// The first host founds the circle.
    package func found(file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try hosts[0].run(["sync", "init", "--server", conninfo, "--name", name(0)] + circleOptions)
        XCTAssertEqual(r.status, 0, "\(r)", file: file, line: line)
    }

    /// Host `i` joins and the first host approves it; true once it is a member.
    @discardableResult
    package func join(_ i: Int, file: StaticString = #filePath, line: UInt = #line) throws -> Bool {
        let h = hosts[i]
        let joined = try h.run(["sync", "join", "--server-file", "-", "--name", name(i)] + circleOptions, input: conninfo + "\n")
        XCTAssertEqual(joined.status, 0, "\(joined)", file: file, line: line)
        let code = joined.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let approved = try hosts[0].run(["sync", "approve", code])
        XCTAssertEqual(approved.status, 0, "\(approved)", file: file, line: line)
        let member = h.waitUntil(60) { status(h)["state"] as? String == "member" }
        XCTAssertTrue(member, shown(h), file: file, line: line)
        return member
    }

    /// Founds the circle on the first host and brings in every other.
    package func formCircle(file: StaticString = #filePath, line: UInt = #line) throws {
        try found(file: file, line: line)
        for i in 1..<hosts.count { try join(i, file: file, line: line) }
    }

    /// The server's log position of its newest entry.
    package func lastLogPosition() throws -> Int {
        Int(try server.psql("SELECT coalesce(max(seq), 0) FROM keychainfs.log").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }
}
