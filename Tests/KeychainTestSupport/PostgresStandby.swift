import Foundation
import XCTest

/// A streaming-replication standby of a `TestPostgres` for failover tests: made with
/// `pg_basebackup -R` from the primary's Unix socket into `base/standby`, run by the same user on
/// its own socket directory (`base/standby-sock`), promoted with `pg_ctl promote`.
extension TestPostgres {
    package var standbyData: String { base + "/standby" }
    package var standbySocket: String { base + "/standby-sock" }

    /// Both servers, primary first, for libpq to pick the one that takes writes.
    package var failoverConninfo: String {
        "host=\(base)/sock,\(standbySocket) port=5432,5432 dbname=postgres user=\(role) passfile=\(base)/pgpass "
            + "target_session_attrs=read-write"
    }

    /// Makes and starts the standby. - Throws: `XCTSkip` when replication cannot be set up here.
    package func startStandby() throws {
        try FileManager.default.createDirectory(atPath: standbySocket, withIntermediateDirectories: true)
        chown(standbySocket, user.uid, user.gid)
        let copied = try asUser([bin + "/pg_basebackup", "-d", "host=\(base)/sock port=5432 user=\(role)", "-w",
                                 "-D", standbyData, "-R", "-X", "stream", "--no-sync"])
        guard copied.status == 0 else { throw XCTSkip("pg_basebackup: \(String(decoding: copied.err, as: UTF8.self))") }
        // The standby reads the password from the user's passfile, never from its configuration.
        let conf = try FileHandle(forWritingTo: URL(fileURLWithPath: standbyData + "/postgresql.auto.conf"))
        conf.seekToEndOfFile()
        conf.write(Data("primary_conninfo = 'host=\(base)/sock port=5432 user=\(role) passfile=\(base)/pgpass.user application_name=standby'\n".utf8))
        try conf.close()
        let started = try asUser([bin + "/pg_ctl", "-D", standbyData, "-w", "-l", base + "/standby.log",
                                  "-o", "-k \(standbySocket) -c listen_addresses='' -p 5432 -c fsync=off", "start"])
        guard started.status == 0 else {
            throw XCTSkip("the standby cannot start: \((try? String(contentsOfFile: base + "/standby.log", encoding: .utf8)) ?? "")")
        }
    }

    /// Makes the standby the primary (`pg_ctl promote -w`).
    package func promoteStandby() throws {
        let r = try asUser([bin + "/pg_ctl", "-D", standbyData, "-w", "promote"])
        XCTAssertEqual(r.status, 0, String(decoding: r.err, as: UTF8.self))
    }

    package func stopStandby() {
        guard FileManager.default.fileExists(atPath: standbyData + "/postmaster.pid") else { return }
        _ = try? asUser([bin + "/pg_ctl", "-D", standbyData, "-m", "immediate", "stop"])
    }
}
