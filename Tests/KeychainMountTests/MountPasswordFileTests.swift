import Foundation
import KeychainTestSupport
import XCTest

/// PRODUCT 12: a view's `--mode 0400` makes a shared group's file acceptable to libpq, which
/// ignores a passfile with group or other bits. A real server, a real psql.
final class MountPasswordFileTests: MountTestCase {
    var accounts = TestAccounts()
    var stopServer: (() -> Void)?

    override func tearDown() {
        stopServer?()
        super.tearDown()
        accounts.remove()
    }

    /// The newest PostgreSQL's programs (Debian's /usr/lib/postgresql/N/bin).
    static var postgresBin: String? {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.compactMap(Int.init).sorted().last.map { "/usr/lib/postgresql/\($0)/bin" }
            .flatMap { FileManager.default.isExecutableFile(atPath: $0 + "/postgres") ? $0 : nil }
    }

    func testLibpqReadsAModeViewsPassfileOfAGroupFile() throws {
        guard let bin = Self.postgresBin else { throw XCTSkip("PostgreSQL is not installed (scripts/setup.sh installs it)") }
        try accounts.makeGroup()
        let user = try accounts.makeUser(inGroup: true)
        let base = h.dir + "/pg"
        try FileManager.default.createDirectory(atPath: base + "/sock", withIntermediateDirectories: true)
        for p in [base, base + "/sock"] { chown(p, user.uid, user.gid) }
        try "db pass word\n".write(toFile: base + "/pw", atomically: true, encoding: .utf8)
        chown(base + "/pw", user.uid, user.gid)
        let env = ["PATH": "/usr/bin:/bin", "HOME": base, "LC_ALL": "C"]
        func asUser(_ argv: [String], extra: [String: String] = [:]) throws -> Spawn.Outcome {
            try Spawn.run(user.setpriv(initGroups: false) + argv, environment: env.merging(extra) { _, b in b },
                          input: Data(), timeout: 120)
        }
        // A server on a Unix socket in the scratch dir, with password (SCRAM) authentication.
        let made = try asUser([bin + "/initdb", "-D", base + "/data", "-U", "dbuser", "--auth=scram-sha-256",
                               "--pwfile=" + base + "/pw", "--no-sync", "--no-instructions"])
        guard made.status == 0 else { throw XCTSkip("initdb cannot run here: \(String(decoding: made.err, as: UTF8.self))") }
        let started = try asUser([bin + "/pg_ctl", "-D", base + "/data", "-w", "-l", base + "/server.log",
                                  "-o", "-k \(base)/sock -c listen_addresses=''", "start"])
        guard started.status == 0 else {
            let log = (try? String(contentsOfFile: base + "/server.log", encoding: .utf8)) ?? ""
            throw XCTSkip("the PostgreSQL server cannot start here: \(log)")
        }
        stopServer = { _ = try? asUser([bin + "/pg_ctl", "-D", base + "/data", "-m", "immediate", "stop"]) }

        // The passfile is an item of a 0440 group that the database's user belongs to.
        XCTAssertEqual(try h.run(["group", "add", "dbteam", "--group", accounts.groupName!, "--mode", "0440"]).status, 0)
        try add("pg", "pass", "*:*:*:dbuser:db pass word", ["--access-group", "dbteam"])
        func view(_ extra: [String]) throws -> String {
            let point = h.dir + "/view\(extra.count)"
            try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: false)
            mountpoints.append(point)
            let r = try h.run(["mount", "-o", "allow_other", "--groups", "dbteam", "--map-owner", "\(user.uid):\(user.gid)"]
                              + extra + [point])
            XCTAssertEqual(r.status, 0, "\(r)")
            return point
        }
        let strict = try view(["--mode", "0400"]), shared = try view([])
        XCTAssertEqual((FS.stat(strict + "/pg/pass").st?.st_mode ?? 0) & 0o777, 0o400)
        XCTAssertEqual((FS.stat(shared + "/pg/pass").st?.st_mode ?? 0) & 0o777, 0o440)
        let query = [bin + "/psql", "host=\(base)/sock user=dbuser dbname=postgres", "-w", "-At", "-c", "select 40 + 2"]
        let accepted = try asUser(query, extra: ["PGPASSFILE": strict + "/pg/pass"])
        XCTAssertEqual(accepted.status, 0, String(decoding: accepted.err, as: UTF8.self))
        XCTAssertEqual(String(decoding: accepted.out, as: UTF8.self), "42\n")
        // The same file through a view without --mode: libpq ignores it, and no password is sent.
        let refused = try asUser(query, extra: ["PGPASSFILE": shared + "/pg/pass"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(String(decoding: refused.err, as: UTF8.self).contains("group or world access"),
                      String(decoding: refused.err, as: UTF8.self))
    }
}
