import Foundation
import XCTest

/// PgBouncer in transaction mode in front of a `TestPostgres`, for hosts that poll through a
/// pooler: run by the server's user on a Unix socket of its own (`base/pooler`), the role's
/// password in its auth file, `poolSize` server connections at most however many clients come.
extension TestPostgres {
    package var poolerSocket: String { base + "/pooler" }

    /// The connection string through the pooler (the password from the same passfile).
    package var poolerConninfo: String { "host=\(poolerSocket) port=6432 dbname=postgres user=\(role) passfile=\(base)/pgpass" }

    /// Starts PgBouncer. - Throws: `XCTSkip` when it is not installed or cannot start here.
    package func startPooler(poolSize: Int) throws {
        let program = "/usr/sbin/pgbouncer"
        guard FileManager.default.isExecutableFile(atPath: program) else {
            throw XCTSkip("PgBouncer is not installed (scripts/setup.sh installs it)")
        }
        try FileManager.default.createDirectory(atPath: poolerSocket, withIntermediateDirectories: true)
        chown(poolerSocket, user.uid, user.gid)
        try write(base + "/pooler.users", "\"\(role)\" \"\(password)\"\n", owner: user)
        try write(base + "/pooler.ini", """
            [databases]
            postgres = host=\(base)/sock port=\(tcp?.port ?? 5432) dbname=postgres
            [pgbouncer]
            listen_addr =
            unix_socket_dir = \(poolerSocket)
            listen_port = 6432
            auth_type = scram-sha-256
            auth_file = \(base)/pooler.users
            pool_mode = transaction
            default_pool_size = \(poolSize)
            max_client_conn = 2000
            server_idle_timeout = 60
            logfile = \(base)/pooler.log
            pidfile = \(base)/pooler.pid

            """, owner: user)
        let started = try asUser([program, "-d", base + "/pooler.ini"])
        guard started.status == 0 else {
            throw XCTSkip("PgBouncer cannot start: \(String(decoding: started.err, as: UTF8.self))")
        }
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: poolerSocket + "/.s.PGSQL.6432") && Date() < deadline { usleep(50_000) }
    }

    /// Ends PgBouncer, if it runs (SIGINT: at once, closing its connections).
    package func stopPooler() {
        guard let text = try? String(contentsOfFile: base + "/pooler.pid", encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return }
        kill(pid, SIGINT)
        let deadline = Date().addingTimeInterval(10)
        while kill(pid, 0) == 0 && Date() < deadline { usleep(50_000) }
        try? FileManager.default.removeItem(atPath: base + "/pooler.pid")
    }

    /// The server's client backends, the asking one left out.
    package func backends() throws -> Int {
        Int(try psql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Logs every statement of the role's sessions from now on, in `server.log` (`statements`).
    package func logStatements() throws {
        _ = try psql("ALTER ROLE \(role) SET log_statement = 'all'")
    }

    /// The statements the server logged since `logStatements` that contain `text` (case as given).
    package func statements(containing text: String) -> [String] {
        let log = (try? String(contentsOfFile: base + "/server.log", encoding: .utf8)) ?? ""
        // "statement: " for the simple protocol, "execute <unnamed>: " for the extended one.
        return log.split(separator: "\n").filter { ($0.contains("statement: ") || $0.contains("execute ")) && $0.contains(text) }
            .map(String.init)
    }
}
