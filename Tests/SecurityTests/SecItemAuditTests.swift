import Foundation
import KeychainTestSupport
import Security
import XCTest

/// Secrets read through the socket in the audit log (docs/cli.md): a process's first read of an
/// item is a `read` line naming the item; its further reads within the second are counted into
/// one `read-repeated` line, so a program that asks on every request does not grow the log by a
/// line per read, and every read is still accounted for.
final class SecItemAuditTests: SecItemConformanceCase {
    func testRepeatedReadsOfOneItemAreCountedOnLinesNamingTheItem() throws {
        let service = unique()
        assertStatus(addPassword(service: service, account: "reader", data: Data("audited-secret".utf8)), errSecSuccess, "add")
        var refQuery = genp(service, "reader")
        refQuery[kSecReturnPersistentRef as String] = true
        guard let ref = copyMatching(refQuery).result as? Data else { return XCTFail("no persistent reference") }
        let refHex = ref.map { String(format: "%02x", $0) }.joined()
        let reads = 20
        for _ in 0..<reads { XCTAssertEqual(dataOf(genp(service, "reader")).data, Data("audited-secret".utf8)) }

        let audit = try h.run(["audit"])  // writes the pending counts first
        XCTAssertEqual(audit.status, 0, "\(audit)")
        let ours = audit.stdout.split(separator: "\n")
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
            .filter { $0.count >= 8 && $0[3] == String(getpid()) && $0[4].hasPrefix("read") }
        XCTAssertFalse(ours.isEmpty, audit.stdout)
        XCTAssertLessThanOrEqual(ours.count, 6, "a line per second of reads, not per read:\n\(audit.stdout)")
        XCTAssertEqual(ours.first?[4], "read", "the first read has a line of its own")
        var counted = 0
        for line in ours {
            XCTAssertTrue(line[5].hasPrefix(refHex), "names the item: \(line)")
            switch line[4] {
            case "read": counted += 1
            case "read-repeated":
                guard let n = line[5].split(separator: "=").last.flatMap({ Int($0) }) else { XCTFail("no count: \(line)"); continue }
                counted += n
            default: XCTFail("unexpected event \(line[4])")
            }
        }
        XCTAssertEqual(counted, reads, "every read is accounted for")
        let file = try String(contentsOfFile: h.vault + ".audit", encoding: .utf8)
        XCTAssertFalse(file.contains("audited-secret"), "no secret in the log")
    }
}
