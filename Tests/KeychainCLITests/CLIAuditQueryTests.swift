import Foundation
import KeychainTestSupport
import XCTest

/// `audit` as an operator reads it: ISO times, every item line naming its item by reference,
/// names for the items the caller may see, `--json`, filters, and usage errors (exit 2).
final class CLIAuditQueryTests: HarnessTestCase {
    var logPath: String { h.vault + ".audit" }

    func rows(_ text: String) -> [[String]] {
        text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    /// Adds, reads, updates (add -U) and deletes one item; returns its reference from the log.
    func touchOneItem() throws -> String {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "q-svc", "-a", "q-acct", "-w", "one"]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "q-svc", "-w"]).stdout, "one\n")
        XCTAssertEqual(try h.run(["add-generic-password", "-U", "-s", "q-svc", "-a", "q-acct", "-w", "two"]).status, 0)
        XCTAssertEqual(try h.run(["delete-generic-password", "-s", "q-svc"]).status, 0)
        let add = try XCTUnwrap(rows(try String(contentsOfFile: logPath, encoding: .utf8)).first { $0[4] == "add" })
        return add[5]
    }

    func testTimesAreISO8601InUTCAndTheFileKeepsEpochSeconds() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "t", "-a", "t", "-w", "x"]).status, 0)
        let shown = rows(try h.run(["audit"]).stdout)
        let stored = rows(try String(contentsOfFile: logPath, encoding: .utf8))
        XCTAssertEqual(shown.count, stored.count)
        let iso = ISO8601DateFormatter()
        for (s, f) in zip(shown, stored) {
            XCTAssertNotNil(f[1].range(of: #"^[0-9]+$"#, options: .regularExpression), "on disk: epoch seconds, as chained: \(f)")
            XCTAssertNotNil(s[1].range(of: #"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"#, options: .regularExpression), "\(s)")
            XCTAssertEqual(iso.date(from: s[1])?.timeIntervalSince1970, Double(f[1]), "the same instant")
            XCTAssertEqual(Array(s[0..<8].enumerated().filter { $0.offset != 1 }.map(\.element)),
                           Array(f.enumerated().filter { $0.offset != 1 }.map(\.element)), "the other fields as on disk")
        }
        XCTAssertEqual(try h.run(["audit", "--verify"]).stdout, "audit log verified: 2 entries\n")
    }

    func testEveryItemLineOfTheCLICarriesTheReference() throws {
        let ref = try touchOneItem()
        XCTAssertTrue(ref.hasPrefix("67656e70"), "genp in hex, then the UUID: \(ref)")
        XCTAssertEqual(ref.utf8.count, 40)
        let lines = rows(try h.run(["audit"]).stdout)
        for event in ["add", "read", "update", "delete"] {
            let line = try XCTUnwrap(lines.first { $0[4] == event }, "a \(event) line")
            XCTAssertEqual(line[5], ref, "\(event) names the item")
        }
        // add -U finds the item first: no add is tried, so no add-failed line.
        XCTAssertFalse(lines.contains { $0[4] == "add-failed" }, "\(lines)")
        // Deleted: the name is gone, the reference stays.
        XCTAssertTrue(lines.filter { $0[5] == ref }.allSatisfy { $0[8] == "-" })
    }

    func testNamesOfItemsTheCallerMaySee() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "named-svc", "-a", "named-acct", "-w", "s"]).status, 0)
        XCTAssertEqual(try h.run(["add-internet-password", "-s", "host.example", "-a", "web", "-w", "s"]).status, 0)
        let lines = rows(try h.run(["audit"]).stdout)
        let adds = lines.filter { $0[4] == "add" }
        XCTAssertEqual(adds.map { $0[8] }, ["named-svc/named-acct", "host.example/web"])
        XCTAssertEqual(lines.first { $0[4] == "unlock" }?[8], "-", "no item")
        XCTAssertFalse(try String(contentsOfFile: logPath, encoding: .utf8).contains("named-svc"), "never on disk")
    }

    func testJSONIsOneObjectPerLine() throws {
        let ref = try touchOneItem()
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "kept", "-a", "acct", "-w", "s"]).status, 0)
        let r = try h.run(["audit", "--json"])
        XCTAssertEqual(r.status, 0, "\(r)")
        let objects = r.stdout.split(separator: "\n").map { h.jsonObject(String($0)) }
        XCTAssertEqual(objects.count, rows(try String(contentsOfFile: logPath, encoding: .utf8)).count)
        let unlock = objects[0]
        XCTAssertEqual(Set(unlock.keys), ["seq", "time", "uid", "pid", "event", "detail", "exe", "chain"])
        XCTAssertEqual(unlock["seq"] as? Int, 1)
        XCTAssertEqual(unlock["uid"] as? Int, 0)
        XCTAssertEqual(unlock["event"] as? String, "unlock")
        XCTAssertEqual(unlock["detail"] as? String, "-")
        XCTAssertEqual((unlock["chain"] as? String)?.utf8.count, 64)
        XCTAssertNotNil((unlock["time"] as? String).flatMap(ISO8601DateFormatter().date(from:)))
        let deleted = try XCTUnwrap(objects.first { $0["event"] as? String == "delete" })
        XCTAssertEqual(deleted["item"] as? [String: String], ["ref": ref, "class": "genp"], "gone: the reference alone")
        let kept = try XCTUnwrap(objects.last { $0["event"] as? String == "add" })
        let item = try XCTUnwrap(kept["item"] as? [String: String])
        XCTAssertEqual(item["service"], "kept")
        XCTAssertEqual(item["account"], "acct")
        XCTAssertEqual(item["class"], "genp")
    }

    func testFilters() throws {
        let ref = try touchOneItem()
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "other", "-a", "acct", "-w", "s"]).status, 0)
        let all = rows(try h.run(["audit"]).stdout)
        func audit(_ args: [String]) throws -> [[String]] {
            let r = try h.run(["audit"] + args)
            XCTAssertEqual(r.status, 0, "\(args): \(r)")
            return rows(r.stdout)
        }
        XCTAssertEqual(try audit(["--event", "read"]).map { $0[4] }, ["read"])
        // add -U of an existing item updates it: no add line of its own.
        XCTAssertEqual(try audit(["--event", "add,delete"]).map { $0[4] + " " + ($0[5] == "-" ? "-" : "ref") },
                       ["add ref", "delete ref", "add ref"])
        XCTAssertEqual(try audit(["--item", ref]).map { $0[4] }, ["add", "read", "update", "delete"])
        XCTAssertEqual(try audit(["--item", ref.uppercased()]).map { $0[4] }, ["add", "read", "update", "delete"])
        XCTAssertEqual(try audit(["--item", "other/acct"]).map { $0[4] }, ["add"])
        XCTAssertEqual(try audit(["--item", "other/"]).map { $0[8] }, ["other/acct"], "an empty side matches any")
        let gone = try h.run(["audit", "--item", "q-svc/q-acct"])
        XCTAssertEqual(gone.status, 44, "deleted: found by its reference only: \(gone)")
        XCTAssertEqual(gone.stderr, "keychainfs: --item q-svc/q-acct: no item of that name that you may see (a deleted item is found by its reference)\n")
        XCTAssertEqual(try audit(["--uid", "0"]).count, all.count)
        XCTAssertEqual(try audit(["--uid", "root"]).count, all.count)
        XCTAssertEqual(try audit(["--uid", "4294967294"]).count, 0)
        XCTAssertEqual(try audit(["--since", "1h"]).count, all.count)
        XCTAssertEqual(try audit(["--since", "2999-01-01"]).count, 0)
        XCTAssertEqual(try audit(["--until", "2001-09-09T01:46:40Z"]).count, 0)
        XCTAssertEqual(try audit(["--until", "0s", "--since", "2000-01-01T00:00:00Z"]).count, all.count)
        // Inclusive bounds: one line's own second selects it.
        let iso = all[2][1]
        XCTAssertEqual(try audit(["--since", iso, "--until", iso]).map { $0[0] }, all.filter { $0[1] == iso }.map { $0[0] })
    }

    func testBadFlagsAndValuesExit2() throws {
        let cases: [([String], String)] = [
            (["--bogus"], "keychainfs: unknown option --bogus\n"),
            (["--since"], "keychainfs: option --since needs a value\n"),
            (["--since", "yesterday"], "keychainfs: --since takes an ISO 8601 time in UTC (2026-12-02T01:30:00Z or 2026-12-02) or a span back from now (90s, 15m, 2h, 7d); \"yesterday\" is neither\n"),
            (["--until", "2026-02-30"], "keychainfs: --until takes an ISO 8601 time in UTC (2026-12-02T01:30:00Z or 2026-12-02) or a span back from now (90s, 15m, 2h, 7d); \"2026-02-30\" is neither\n"),
            (["--since", "1h", "--until", "2h"], "keychainfs: --since is after --until\n"),
            (["--event", "reed"], "keychainfs: --event takes audit event names (such as read, add, file-open-read, add-failed, read-repeated); \"reed\" is not one\n"),
            (["--uid", "-1"], "keychainfs: --uid takes a user name or a uid from 0 to 4294967294; -1 is out of range\n"),
            (["--uid", "kcfs_no_such_user"], "keychainfs: no such user kcfs_no_such_user\n"),
            (["--item", "noslash"], "keychainfs: --item takes SERVICE/ACCOUNT or a persistent reference (40 hex digits); \"noslash\" is neither\n"),
            (["--verify", "--event", "read"], "keychainfs: audit --verify takes no --event\n"),
            (["rotate", "--since", "1h"], "keychainfs: audit rotate takes no --since\n"),
        ]
        for (args, message) in cases {
            let r = try h.run(["audit"] + args)
            XCTAssertEqual(r.status, 2, "\(args): \(r)")
            XCTAssertTrue(r.stderr.hasPrefix(message), "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("usage: keychainfs audit"), "the verb's help follows")
            XCTAssertEqual(r.stdout, "")
        }
        let size = try h.run(["set-keychain-settings", "--audit-max-size", "100"])
        XCTAssertEqual(size.status, 2, "\(size)")
        XCTAssertTrue(size.stderr.hasPrefix("keychainfs: --audit-max-size takes 0 or a number of bytes from 4096 to 1099511627776; 100 is out of range\n"), size.stderr)
    }

    func testALogLargerThanAReplyShowsItsNewestLinesAndSaysSo() throws {
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        // 85,000 old lines (14 MiB) before the daemon's own: more than one reply holds.
        let filler = (1...85_000).map { "\($0)\t1000000000\t0\t1\tread\t" + String(repeating: "f", count: 40) + "\t/usr/bin/" + String(repeating: "x", count: 40) + "\t" + String(repeating: "0", count: 64) + "\n" }.joined()
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: logPath))
        handle.seekToEndOfFile()
        handle.write(Data(filler.utf8))
        handle.closeFile()
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        let r = try h.run(["audit"])
        XCTAssertEqual(r.status, 0, "status \(r.status), stderr \(r.stderr)")
        XCTAssertTrue(r.stderr.hasPrefix("keychainfs: audit: the "), r.stderr)
        XCTAssertTrue(r.stderr.hasSuffix(" oldest matching lines are left out (a reply holds 12 MiB of lines); narrow it with --since, --until, --item, --uid or --event\n"), r.stderr)
        XCTAssertLessThanOrEqual(r.stdout.utf8.count, 14 << 20)
        XCTAssertEqual(rows(r.stdout).last?[4], "unlock", "the newest line is shown")
        let recent = try h.run(["audit", "--since", "1h"])
        let none = try h.run(["audit", "--uid", "4294967294"])
        print("audit of a 14 MiB log: \(r.elapsed) s; with --since 1h: \(recent.elapsed) s; no match \(none.elapsed) s")
        XCTAssertEqual(recent.stderr, "", "a filter that fits says nothing")
        XCTAssertEqual(rows(recent.stdout).map { $0[4] }, ["unlock", "stop", "unlock"])
    }
}
