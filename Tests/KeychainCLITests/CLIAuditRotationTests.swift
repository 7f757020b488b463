import Foundation
import KeychainTestSupport
import XCTest

/// Rotation: `audit rotate` and `set-keychain-settings --audit-max-size` move the log aside as
/// VAULT.audit.N; one chain runs through the files, and `--verify` names the file that breaks.
final class CLIAuditRotationTests: HarnessTestCase {
    var logPath: String { h.vault + ".audit" }

    func lines(_ path: String) throws -> [[String]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    func testRotateStartsAFileThatContinuesTheChain() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "r", "-a", "1", "-w", "x"]).status, 0)
        let before = try lines(logPath)
        let r = try h.run(["audit", "rotate"])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertEqual(r.stdout, "audit log rotated: \(logPath).1\n")
        XCTAssertEqual(try lines(logPath + ".1"), before, "the old file, moved whole")
        let first = try XCTUnwrap(try lines(logPath).first)
        XCTAssertEqual(first[0], String(before.count + 1), "SEQ goes on")
        XCTAssertEqual(Array(first[2...6]), ["-", "-", "rotated", "from=\((logPath as NSString).lastPathComponent).1 chain=\(before.last![7])", "-"])
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "r", "-a", "2", "-w", "x"]).status, 0)
        let verified = try h.run(["audit", "--verify"])
        XCTAssertEqual(verified.status, 0, "\(verified)")
        XCTAssertEqual(verified.stdout, "audit log verified: \(before.count + 2) entries in 2 files\n")
        XCTAssertEqual(try h.run(["audit", "--verify", "--json"]).stdout, "{\"lines\":\(before.count + 2),\"files\":2,\"verified\":true}\n")
        // `audit` shows every file, oldest first.
        let shown = try h.run(["audit"]).stdout.split(separator: "\n").map { $0.split(separator: "\t").first.map(String.init) ?? "" }
        XCTAssertEqual(shown, (1...(before.count + 2)).map(String.init))
        XCTAssertEqual(try h.run(["audit", "rotate", "--json"]).stdout, "{\"rotated\":\"\(logPath).2\"}\n")
    }

    func testMaxSizeRotatesAndVerifyNamesTheAlteredFile() throws {
        let set = try h.run(["set-keychain-settings", "--audit-max-size", "4096"])
        XCTAssertEqual(set.status, 0, "\(set)")
        for i in 0..<60 {
            XCTAssertEqual(try h.run(["add-generic-password", "-s", "size", "-a", "a\(i)", "-w", "x"]).status, 0)
        }
        var st = stat()
        XCTAssertEqual(stat(logPath + ".2", &st), 0, "two rotations at least")
        for n in [1, 2] {
            XCTAssertEqual(stat(logPath + ".\(n)", &st), 0)
            XCTAssertGreaterThanOrEqual(st.st_size, 4096, "rotated once past the size")
            XCTAssertLessThan(st.st_size, 4096 + 512, "and not much past it")
            XCTAssertEqual(st.st_mode & 0o777, 0o600)
        }
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked", "-t was not touched: no lock")
        let ok = try h.run(["audit", "--verify"])
        XCTAssertEqual(ok.status, 0, "\(ok)")
        XCTAssertTrue(ok.stdout.hasPrefix("audit log verified: "), ok.stdout)
        XCTAssertTrue(ok.stdout.contains(" files\n"), ok.stdout)

        // One field of line 3 of the oldest file changed.
        let oldest = logPath + ".1"
        try changeAuditField(2, ofLine: 3, in: oldest, to: "1000")
        let broken = try h.run(["audit", "--verify"])
        XCTAssertEqual(broken.status, 93, "\(broken)")
        XCTAssertEqual(broken.stderr, "keychainfs: the audit log is broken at line 3 of \(oldest)\n")
        let verify = try h.run(["verify"])
        XCTAssertEqual(verify.status, 93)
        XCTAssertTrue(verify.stdout.contains("audit log: broken at line 3 of \(oldest)\n"), verify.stdout)
    }

    func testAFileRemovedFromTheMiddleBreaksTheChain() throws {
        XCTAssertEqual(try h.run(["audit", "rotate"]).status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "m", "-a", "1", "-w", "x"]).status, 0)
        XCTAssertEqual(try h.run(["audit", "rotate"]).status, 0)
        XCTAssertEqual(try h.run(["audit", "--verify"]).status, 0)
        XCTAssertEqual(unlink(logPath + ".2"), 0)
        let broken = try h.run(["audit", "--verify"])
        XCTAssertEqual(broken.status, 93, "\(broken)")
        XCTAssertEqual(broken.stderr, "keychainfs: the audit log is broken at line 1 of \(logPath)\n")
    }

    func testARotationCutShortByACrashIsUndoneAtStart() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "c", "-a", "1", "-w", "x"]).status, 0)
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        // As a daemon killed between its link and its rename leaves them.
        XCTAssertEqual(link(logPath, logPath + ".1"), 0)
        XCTAssertTrue(FileManager.default.createFile(atPath: logPath + ".new", contents: Data("1\tpartial".utf8)))
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        let ok = try h.run(["audit", "--verify"])
        XCTAssertEqual(ok.status, 0, "\(ok)")
        XCTAssertEqual(ok.stdout, "audit log verified: 4 entries\n", "one file again")
        XCTAssertFalse(FileManager.default.fileExists(atPath: logPath + ".1"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: logPath + ".new"))
    }
}
