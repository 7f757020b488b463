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
}
