import Foundation
import KeychainTestSupport
import XCTest

/// Every file open is in the audit log (PRODUCT 5, 8): a process's first open of an item is a
/// line of its own, its repeats within a second are one counted line, and the chain holds.
final class MountAuditTests: MountTestCase {
    /// The audit log's lines as fields (SEQ TIME UID PID EVENT DETAIL EXE CHAIN).
    func auditLines(fromFile: Bool = false) throws -> [[String]] {
        let text = fromFile ? try String(contentsOfFile: h.vault + ".audit", encoding: .utf8) : try h.run(["audit"]).stdout
        return text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    /// Opens of one item by `pid`: first-open lines and the sum of the counted repeats.
    func opens(of pid: String, in lines: [[String]]) -> (firsts: Int, repeats: Int) {
        var firsts = 0, repeats = 0
        for f in lines where f.count >= 8 && f[3] == pid {
            if f[4] == "file-open-read" { firsts += 1 }
            if f[4] == "file-open-read-repeated", let n = f[5].split(separator: "=").last.flatMap({ Int($0) }) { repeats += n }
        }
        return (firsts, repeats)
    }

    func testEveryOpenIsCountedAndFirstOpensHaveTheirOwnLine() throws {
        try add("svc", "acct", "s3cret")
        let mnt = try mount()
        let path = mnt + "/svc/acct"
        // One shell opens the file 50 times itself (a redirection of a builtin opens in the shell).
        let loop = try runProgram(["/bin/bash", "-c", "for i in $(seq 50); do read -r x < \"$1\" || [ -n \"$x\" ] || exit 1; done; echo $$", "_", path])
        XCTAssertEqual(loop.status, 0, loop.description)
        let loopPid = loop.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        // Two separate processes: one line each.
        let cat1 = try runProgram(["/bin/bash", "-c", "cat \"$1\" >/dev/null & wait $!; echo $!", "_", path])
        let cat2 = try runProgram(["/bin/bash", "-c", "cat \"$1\" >/dev/null & wait $!; echo $!", "_", path])

        let lines = try auditLines()
        let shell = opens(of: loopPid, in: lines)
        XCTAssertEqual(shell.firsts + shell.repeats, 50, "every open is recorded: \(shell)")
        XCTAssertGreaterThanOrEqual(shell.firsts, 1)
        XCTAssertLessThanOrEqual(shell.firsts, 3, "repeats within a second share a line")
        for cat in [cat1, cat2] {
            let pid = cat.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            let own = lines.filter { $0.count >= 8 && $0[3] == pid && $0[4] == "file-open-read" }
            XCTAssertEqual(own.count, 1, "cat \(pid) has its own line")
            XCTAssertEqual(own.first.map { ($0[6] as NSString).lastPathComponent }, "cat", "with its executable")
            XCTAssertEqual(opens(of: pid, in: lines).repeats, 0)
        }
        // Lines name the item by reference, never by name or secret (`audit` shows root the names).
        let text = try String(contentsOfFile: h.vault + ".audit", encoding: .utf8)
        XCTAssertFalse(text.contains("s3cret") || text.contains("acct"), "no name or secret in the log")
        XCTAssertEqual(try h.run(["audit", "--verify"]).status, 0, "the chain holds")
    }

    func testRepeatsAreWrittenBeforeTheLockLine() throws {
        try add("svc", "acct", "s3cret")
        let mnt = try mount()
        let loop = try runProgram(["/bin/bash", "-c", "for i in $(seq 20); do read -r x < \"$1\" || [ -n \"$x\" ] || exit 1; done; echo $$", "_", mnt + "/svc/acct"])
        XCTAssertEqual(loop.status, 0, loop.description)
        let pid = loop.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        // Straight from the file, without `audit` (which would write pending counts itself).
        let lines = try auditLines(fromFile: true)
        let counted = opens(of: pid, in: lines)
        XCTAssertEqual(counted.firsts + counted.repeats, 20, "all 20 opens are on disk once the lock returns: \(counted)")
        let lock = try XCTUnwrap(lines.lastIndex { $0.count >= 8 && $0[4] == "lock" }, "a lock line")
        let lastOpen = try XCTUnwrap(lines.lastIndex { $0.count >= 8 && $0[3] == pid }, "the shell's lines")
        XCTAssertLessThan(lastOpen, lock, "the reads come before the lock")
    }
}
