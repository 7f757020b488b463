import Foundation
import KeychainTestSupport
import XCTest

/// A kill in the middle of a checkpoint. SQLite copies the WAL's pages back into the vault file
/// in page order, page 1 first, so a daemon killed there leaves a file whose header names pages
/// it does not have yet, beside a WAL that holds them. The vault must open from the two and read
/// every item, not be refused as a file cut short (HardeningCrashTests found it under load).
final class HardeningCheckpointCrashTests: HarnessTestCase {
    func testAVaultWhoseCheckpointWasInterruptedOpensFromItsWAL() throws {
        let count = 60
        for i in 0..<count {
            let add = try h.run(["add-generic-password", "-s", "checkpoint", "-a", "a\(i)", "-w", "-"],
                                input: "secret-\(i)-" + String(repeating: "x", count: 3000))
            XCTAssertEqual(add.status, 0, "add \(i): \(add)")
        }
        // The daemon is idle: the file and its WAL copied now are what a crash would leave.
        let crashed = h.dir + "/crashed.vault"
        addTeardownBlock { [h] in _ = try? h?.run(["stop", crashed], timeout: 10) }
        try FileManager.default.copyItem(atPath: h.vault + "-wal", toPath: crashed + "-wal")
        try FileManager.default.copyItem(atPath: h.vault, toPath: crashed)
        var file = try Array(Data(contentsOf: URL(fileURLWithPath: crashed)))
        let wal = try Array(Data(contentsOf: URL(fileURLWithPath: crashed + "-wal")))
        let pages = try XCTUnwrap(Self.committedPages(wal), "the WAL holds a commit")
        let pageSize = Int(file[16]) << 8 | Int(file[17])
        XCTAssertLessThan(file.count, pages * pageSize, "the adds grew the vault past its file, in the WAL only")
        // Page 1 as the interrupted checkpoint wrote it: the new page count, valid for this version.
        Self.put32(&file, at: 28, UInt32(pages))
        file.replaceSubrange(92..<96, with: file[24..<28])
        try Data(file).write(to: URL(fileURLWithPath: crashed))

        let unlock = try h.run(["unlock-keychain", crashed], input: "pass phrase 1\n")
        XCTAssertEqual(unlock.status, 0, "the vault opens from its WAL: \(unlock)")
        for i in [0, count / 2, count - 1] {
            let find = try h.run(["find-generic-password", "-s", "checkpoint", "-a", "a\(i)", "-w", crashed])
            XCTAssertEqual(find.status, 0, "item \(i): \(find)")
            XCTAssertEqual(find.stdout, "secret-\(i)-" + String(repeating: "x", count: 3000) + "\n", "item \(i)")
        }
    }

    /// The database size in pages of the WAL's last commit frame of its current salt (frame
    /// header: page number, size after commit or 0, two salts, two checksums).
    static func committedPages(_ wal: [UInt8]) -> Int? {
        guard wal.count >= 32 else { return nil }
        let be32 = { (o: Int) in wal[o..<o + 4].reduce(0) { $0 << 8 | Int($1) } }
        let pageSize = be32(8)
        var pages: Int?
        var frame = 32
        while frame + 24 + pageSize <= wal.count, wal[frame + 8..<frame + 16].elementsEqual(wal[16..<24]) {
            if be32(frame + 4) > 0 { pages = be32(frame + 4) }
            frame += 24 + pageSize
        }
        return pages
    }

    static func put32(_ bytes: inout [UInt8], at offset: Int, _ value: UInt32) {
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * i)) }
    }
}
