import Foundation
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// The audit log's files in-process: rotation keeps one chain through them, the size setting
/// rotates, a check names the file that breaks, and the filters pick lines as `audit` shows them.
final class AuditLogFilesTests: XCTestCase {
    var dir: String!
    var path: String { dir + "/v.vault.audit" }
    let caller = CallerIdentity(pid: 42, uid: 1000, gid: 1000, groups: [1000], executable: "/usr/bin/cat")

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "kcfs-auditlog-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let dir { try? FileManager.default.removeItem(atPath: dir) }
        super.tearDown()
    }

    func key() throws -> SecureBytes { try SecureBytes(copying: [UInt8](repeating: 7, count: 32)) }

    func testRotationKeepsOneChainAndTheOldestFileCanStandAlone() throws {
        let log = AuditLog(path: path, key: try key())
        try log.record(.unlock, caller: caller)
        try log.record(.lock, caller: nil, detail: "request")
        XCTAssertEqual(try log.rotate(), path + ".1")
        try log.record(.stop, caller: caller)
        XCTAssertEqual(try log.rotate(), path + ".2")
        let (lines, files, bad) = log.verify()
        XCTAssertEqual(lines, 5, "unlock, lock, rotated, stop, rotated")
        XCTAssertEqual(files, 3)
        XCTAssertNil(bad)
        // The oldest files removed: the next one's `rotated` line starts the chain.
        XCTAssertEqual(unlink(path + ".1"), 0)
        XCTAssertNil(log.verify().firstBad)
        // A log opened again continues the chain after the rotation.
        let reopened = AuditLog(path: path, key: try key())
        try reopened.record(.unlock, caller: caller)
        XCTAssertNil(reopened.verify().firstBad)
        // Another key: the first line of the first file breaks.
        let other = AuditLog(path: path, key: try SecureBytes(copying: [UInt8](repeating: 8, count: 32)))
        XCTAssertEqual(other.verify().firstBad, AuditBreak(file: path + ".2", line: 1))
    }

    func testMaxSizeRotatesAfterTheLineThatReachesIt() throws {
        let log = AuditLog(path: path, key: try key())
        log.setMaxSize(4096)
        for _ in 0..<100 { try log.record(.read, caller: caller, detail: String(repeating: "d", count: 60)) }
        let rotated = AuditFiles(path: path).rotated()
        XCTAssertGreaterThanOrEqual(rotated.count, 2)
        for file in rotated {
            var st = stat()
            XCTAssertEqual(stat(file.path, &st), 0)
            XCTAssertGreaterThanOrEqual(st.st_size, 4096)
            XCTAssertLessThan(st.st_size, 4096 + 200, "one line past the size at most")
        }
        XCTAssertNil(log.verify().firstBad)
        XCTAssertEqual(log.contents().split(separator: "\n").count, 100 + rotated.count, "every line, and a rotated line per file")
        // --since reads no rotated file that ends before it.
        let newest = try XCTUnwrap(AuditFiles.lastTime(of: rotated[0].path))
        XCTAssertEqual(log.contents(since: newest + 3600).split(separator: "\n").count,
                       try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count)
    }

    func testFilterPicksLinesByTimeUidEventAndItem() throws {
        let ref = "67656e70" + String(repeating: "ab", count: 16)
        let lines: [Substring] = ["1\t100\t0\t1\tunlock\t-\t/bin/x\tc", "2\t200\t1000\t2\tread\t\(ref)\t/bin/y\tc",
                                  "3\t300\t1000\t2\tread-repeated\t\(ref) count=4\t/bin/y\tc", "4\t400\t-\t-\trotated\tfrom=a chain=b\t-\tc"]
        func kept(_ options: Options) throws -> [String] {
            let f = try AuditFilter(try AuditQuery(options)) { _, _ in [ref] }
            return lines.filter(f.keeps).map { String($0.prefix(1)) }
        }
        XCTAssertEqual(try kept([:]), ["1", "2", "3", "4"])
        XCTAssertEqual(try kept(["since": .number(200), "until": .number(300)]), ["2", "3"])
        XCTAssertEqual(try kept(["uid": .number(1000)]), ["2", "3"])
        XCTAssertEqual(try kept(["events": .string("read,rotated")]), ["2", "4"])
        XCTAssertEqual(try kept(["item-ref": .string(ref)]), ["2", "3"])
        XCTAssertEqual(try kept(["item-service": .string("s"), "item-account": .string("")]), ["2", "3"])
        XCTAssertThrowsError(try kept(["events": .string("nosuch")]))
        XCTAssertThrowsError(try kept(["item-ref": .string("zz")]))
        XCTAssertEqual(AuditFilter.reference(in: lines[2]), Substring(ref))
        XCTAssertNil(AuditFilter.reference(in: lines[3]))
    }

    /// The fields of the lines in the file, split at tabs.
    func fileLines() throws -> [[String]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    func testATextThatLooksEscapedAndAControlByteAreWrittenApart() throws {
        let log = AuditLog(path: path, key: try key())
        let literal = "/opt/p\\xa9999/bin", newline = "/opt/p\n9999/bin"
        for exe in [literal, newline] {
            try log.record(.read, caller: CallerIdentity(pid: 42, uid: 1000, gid: 1000, groups: [1000], executable: exe))
        }
        try log.record(.add, caller: caller, detail: "tab\there back\\slash del\u{7f} nul\u{0}")
        let lines = try fileLines()
        XCTAssertEqual(lines.count, 3, "one line each: \(lines)")
        XCTAssertTrue(lines.allSatisfy { $0.count == 8 }, "\(lines)")
        XCTAssertEqual(lines[0][6], "/opt/p\\\\xa9999/bin", "the backslash doubled")
        XCTAssertEqual(lines[1][6], "/opt/p\\x0a9999/bin", "the newline in two hex digits")
        XCTAssertNotEqual(lines[0][6], lines[1][6])
        XCTAssertEqual(lines[2][5], "tab\\x09here back\\\\slash del\\x7f nul\\x00")
        XCTAssertNil(log.verify().firstBad)
        // The daemon's own log names a caller the same way.
        XCTAssertEqual(printable(literal), lines[0][6])
        XCTAssertEqual(printable(newline), lines[1][6])
    }

    /// The chain covers the bytes as written: lines of the earlier escaping (`\xa`, a bare `\`)
    /// still verify, and the log goes on after them.
    func testALogWrittenWithTheEarlierEscapingVerifiesAndContinues() throws {
        let k = try key()
        var head = [UInt8](repeating: 0, count: 32)
        var text = ""
        for (seq, exe) in [(1, "/opt/p\\xa9999/bin"), (2, "/opt/back\\slash")] {
            let fields = "\(seq)\t1700000000\t1000\t42\tread\t-\t\(exe)"
            Array(fields.utf8).withUnsafeBytes { KeyedHash.extend(&head, with: $0, key: k) }
            text += fields + "\t" + Hex.encode(head) + "\n"
        }
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        let log = AuditLog(path: path, key: k)
        XCTAssertNil(log.verify().firstBad, "the earlier lines verify")
        try log.record(.unlock, caller: CallerIdentity(pid: 43, uid: 1000, gid: 1000, groups: [1000], executable: "/opt/p\\q"))
        let (lines, _, bad) = log.verify()
        XCTAssertEqual(lines, 3)
        XCTAssertNil(bad, "the new line continues the chain")
        XCTAssertEqual(try fileLines().map { $0[6] }, ["/opt/p\\xa9999/bin", "/opt/back\\slash", "/opt/p\\\\q"])
    }

    /// A `rotated` line names the file before it escaped, and its chain is the detail's last part.
    func testARotatedLineNamesAnOddVaultNameEscaped() throws {
        let odd = dir + "/new\nline chain=" + String(repeating: "0", count: 64) + ".vault.audit"
        let log = AuditLog(path: odd, key: try key())
        try log.record(.unlock, caller: caller)
        XCTAssertEqual(try log.rotate(), odd + ".1")
        let current = try String(contentsOfFile: odd, encoding: .utf8)
        XCTAssertEqual(current.split(separator: "\n").count, 1, "one line: \(current.debugDescription)")
        let detail = current.split(separator: "\t", omittingEmptySubsequences: false)[5]
        XCTAssertTrue(detail.hasPrefix("from=new\\x0aline chain=" + String(repeating: "0", count: 64) + ".vault.audit.1 chain="), String(detail))
        XCTAssertNil(log.verify().firstBad)
        // The older file removed: the chain starts from the CHAIN the rotated line names last.
        XCTAssertEqual(unlink(odd + ".1"), 0)
        XCTAssertNil(log.verify().firstBad)
    }
}
