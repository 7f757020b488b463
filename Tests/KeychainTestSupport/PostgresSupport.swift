import Foundation
import XCTest

/// A real PostgreSQL server for one test: a cluster made with initdb in `base`, run by a
/// throw-away Unix user (postgres refuses root), on a Unix socket only, with password (SCRAM)
/// authentication. `stop()` ends it; the caller removes `base` and the user.
package final class TestPostgres {
    package let bin: String
    package let base: String
    package let user: TestUser
    /// The database role and its password.
    package let role = "kcsync"
    /// The role's password (this module's pooler puts it in its auth file).
    let password = "pg pass \(UUID().uuidString.prefix(8))"
    private var running = false
    /// A TCP address and port it also listens on, with password logins from `network`.
    package let tcp: (address: String, port: Int, network: String)?
    /// Commits wait for a standby to have them (`synchronous_standby_names = '*'`): a change
    /// acknowledged by this server survives its loss once a standby is promoted.
    package let synchronousStandby: Bool

    /// The newest PostgreSQL's programs (Debian's /usr/lib/postgresql/N/bin).
    package static var bin: String? {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.compactMap(Int.init).sorted().last.map { "/usr/lib/postgresql/\($0)/bin" }
            .flatMap { FileManager.default.isExecutableFile(atPath: $0 + "/postgres") ? $0 : nil }
    }

    /// Starts the server. - Throws: `XCTSkip` when PostgreSQL is missing or cannot run here.
    package init(base: String, accounts: TestAccounts, tcp: (address: String, port: Int, network: String)? = nil,
         synchronousStandby: Bool = false) throws {
        self.tcp = tcp
        self.synchronousStandby = synchronousStandby
        guard let bin = Self.bin else { throw XCTSkip("PostgreSQL is not installed (scripts/setup.sh installs it)") }
        self.bin = bin
        self.base = base
        user = try accounts.makeUser()
        try FileManager.default.createDirectory(atPath: base + "/sock", withIntermediateDirectories: true)
        for p in [base, base + "/sock"] { chown(p, user.uid, user.gid) }
        try write(base + "/pw", password + "\n", owner: user)
        // One passfile for the daemons (root's), one for this user's psql and pg_dump.
        try write(base + "/pgpass", "*:*:*:\(role):\(password)\n", owner: nil)
        try write(base + "/pgpass.user", "*:*:*:\(role):\(password)\n", owner: user)
        let made = try asUser([bin + "/initdb", "-D", base + "/data", "-U", role, "--auth=scram-sha-256",
                               "--pwfile=" + base + "/pw", "--no-sync", "--no-instructions"])
        guard made.status == 0 else { throw XCTSkip("initdb cannot run here: \(String(decoding: made.err, as: UTF8.self))") }
        if let tcp {
            let hba = try FileHandle(forWritingTo: URL(fileURLWithPath: base + "/data/pg_hba.conf"))
            hba.seekToEndOfFile()
            hba.write(Data("host all \(role) \(tcp.network) scram-sha-256\n".utf8))
            try hba.close()
        }
        try start()
    }

    /// Starts the server on its data directory (again, after `stop`). - Throws: `XCTSkip`.
    package func start() throws {
        guard !running else { return }
        let started = try asUser([bin + "/pg_ctl", "-D", base + "/data", "-w", "-l", base + "/server.log",
                                  "-o", "-k \(base)/sock -c listen_addresses='\(tcp?.address ?? "")' -p \(tcp?.port ?? 5432) -c fsync=off\(synchronousStandby ? " -c synchronous_standby_names='*'" : "")", "start"])
        guard started.status == 0 else {
            let log = (try? String(contentsOfFile: base + "/server.log", encoding: .utf8)) ?? ""
            throw XCTSkip("the PostgreSQL server cannot start here: \(log)")
        }
        running = true
    }

    /// A libpq connection string without a password: libpq reads it from the passfile.
    package var conninfo: String { "host=\(base)/sock port=\(tcp?.port ?? 5432) dbname=postgres user=\(role) passfile=\(base)/pgpass" }

    /// The connection string over TCP, when it listens there.
    package var tcpConninfo: String? {
        tcp.map { "host=\($0.address) port=\($0.port) dbname=postgres user=\(role) passfile=\(base)/pgpass" }
    }

    /// Runs SQL with psql as the server's user; standard output, unaligned, tuples only.
    package func psql(_ sql: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let r = try asUser([bin + "/psql", "host=\(base)/sock port=\(tcp?.port ?? 5432) dbname=postgres user=\(role)", "-w", "-At",
                            "-v", "ON_ERROR_STOP=1", "-c", sql])
        XCTAssertEqual(r.status, 0, String(decoding: r.err, as: UTF8.self), file: file, line: line)
        return String(decoding: r.out, as: UTF8.self)
    }

    /// `pg_dump` of the database: every table's rows as text.
    package func dump() throws -> String {
        let r = try asUser([bin + "/pg_dump", "--inserts", "host=\(base)/sock port=\(tcp?.port ?? 5432) dbname=postgres user=\(role)", "-w"])
        XCTAssertEqual(r.status, 0, String(decoding: r.err, as: UTF8.self))
        return String(decoding: r.out, as: UTF8.self)
    }

    package func stop() {
        stopPooler()
        stopStandby()
        stopPrimary()
    }

    /// Ends this server alone (`-m immediate`, as a crash would), leaving its standby running.
    package func stopPrimary() {
        guard running else { return }
        running = false
        _ = try? asUser([bin + "/pg_ctl", "-D", base + "/data", "-m", "immediate", "stop"])
    }

    package func asUser(_ argv: [String]) throws -> Spawn.Outcome {
        let env = ["PATH": "/usr/bin:/bin", "HOME": base, "LC_ALL": "C", "PGPASSFILE": base + "/pgpass.user"]
        return try Spawn.run(user.setpriv(initGroups: false) + argv, environment: env, input: Data(), timeout: 120)
    }

    func write(_ path: String, _ text: String, owner: TestUser?) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        if let owner { chown(path, owner.uid, owner.gid) }
    }
}
