import Foundation
import KeychainTestSupport
import XCTest

/// The audit log (PRODUCT 8): decisions recorded with the caller, no secret or name, and a
/// chain that `audit --verify` checks.
final class CLIAuditTests: HarnessTestCase {
    var logPath: String { h.vault + ".audit" }

    func testEventsAreRecordedWithoutSecretsOrNames() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "audit-svc-Q7", "-a", "audit-acct-Q7", "-w", "-"],
                                 input: "audit-secret-Q7").status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "audit-svc-Q7", "-w"]).stdout, "audit-secret-Q7\n")
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "wrong\n").status, 51)
        let r = try h.run(["audit"])
        XCTAssertEqual(r.status, 0)
        let events = r.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        XCTAssertTrue(events.allSatisfy { $0.count == 9 }, r.stdout)
        XCTAssertEqual(events.map { String($0[4]) }, ["unlock", "add", "read", "lock", "unlock-failed"])
        XCTAssertTrue(events.allSatisfy { $0[2] == "0" }, "uid of the caller")
        // create-keychain runs in the engine binary (keychainfs-daemon); the item verbs in keychainfs.
        XCTAssertEqual(events.map { $0[6].split(separator: "/").last.map(String.init) ?? "" },
                       ["keychainfs-daemon", "keychainfs", "keychainfs", "keychainfs", "keychainfs"], "executable of the caller")
        let file = try String(contentsOfFile: logPath, encoding: .utf8)
        for needle in ["audit-secret-Q7", "audit-svc-Q7", "audit-acct-Q7", "pass phrase 1"] {
            XCTAssertFalse(file.contains(needle), needle)
        }
    }

    func testVerifyPassesThenDetectsAChangedAndARemovedLine() throws {
        for i in 0..<3 {
            XCTAssertEqual(try h.run(["add-generic-password", "-s", "s", "-a", "a\(i)", "-w", "-"], input: "x").status, 0)
        }
        let ok = try h.run(["audit", "--verify"])
        XCTAssertEqual(ok.status, 0, "\(ok)")
        XCTAssertEqual(ok.stdout, "audit log verified: 4 entries\n")
        let original = try String(contentsOfFile: logPath, encoding: .utf8)
        // Change one field of line 3 (the uid), keeping its chain value.
        try changeAuditField(2, ofLine: 3, in: logPath, to: "1000")
        let changed = try h.run(["audit", "--verify"])
        XCTAssertEqual(changed.status, 93, "\(changed)")
        XCTAssertEqual(changed.stderr, "keychainfs: the audit log is broken at line 3 of \(logPath)\n")
        // Restore it, then remove line 2.
        var removed = original.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        removed.remove(at: 1)
        try removed.joined(separator: "\n").write(toFile: logPath, atomically: false, encoding: .utf8)
        let gap = try h.run(["audit", "--verify"])
        XCTAssertEqual(gap.status, 93, "\(gap)")
        XCTAssertEqual(gap.stderr, "keychainfs: the audit log is broken at line 2 of \(logPath)\n")
    }

    /// Two copies of the CLI, one in a directory named with the text `\xa9999`, one with a newline
    /// and `9999`: their reads are audited with executables that read differently, in the file
    /// and in `keychainfs audit`, and no field breaks its line.
    func testAnExecutableNamedWithABackslashReadsApartFromOneWithANewline() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "esc", "-a", "a", "-w", "-"], input: "x").status, 0)
        let literal = h.dir + "/p\\xa9999", newline = h.dir + "/p\n9999"
        for dir in [literal, newline] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
            try FileManager.default.copyItem(atPath: CLIHarness.canonicalBinary, toPath: dir + "/keychainfs")
            // `sh -c 'shift; exec "$0" "$@"' COPY keychainfs ARGS`: the copy runs with the arguments.
            let r = try h.run(["find-generic-password", "-s", "esc", "-a", "a", "-w"],
                              prefix: ["/bin/sh", "-c", "shift; exec \"$0\" \"$@\"", dir + "/keychainfs"])
            XCTAssertEqual(r.stdout, "x\n", "\(dir.debugDescription): \(r)")
        }
        let dir = h.dir.replacingOccurrences(of: "\\", with: "\\\\")
        let expected = [dir + "/p\\\\xa9999/keychainfs", dir + "/p\\x0a9999/keychainfs"]

        let file = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n").map {
            $0.split(separator: "\t", omittingEmptySubsequences: false)
        }
        XCTAssertTrue(file.allSatisfy { $0.count == 8 }, "every line whole: \(file)")
        XCTAssertEqual(file.filter { $0[4] == "read" }.suffix(2).map { String($0[6]) }, expected)

        let shown = try h.run(["audit", "--event", "read"])
        XCTAssertEqual(shown.status, 0, "\(shown)")
        let reads = shown.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        XCTAssertTrue(reads.allSatisfy { $0.count == 9 }, shown.stdout)
        XCTAssertEqual(reads.suffix(2).map { String($0[6]) }, expected)
        XCTAssertEqual(reads.suffix(2).map { String($0[8]) }, ["esc/a", "esc/a"])
        let json = try h.run(["audit", "--event", "read", "--json"])
        let exes = json.stdout.split(separator: "\n").suffix(2).map { h.jsonObject(String($0))["exe"] as? String }
        XCTAssertEqual(exes, expected)
        XCTAssertEqual(try h.run(["audit", "--verify"]).status, 0)
    }
}
