@testable import KeychainCore
import Foundation
import KeychainTestSupport
import SQLiteStore
import XCTest

/// Readers that keep their read transaction from one search to the next until the vault's
/// write connection commits (`Vault.keepsReadSnapshots`, on in the daemon). Real vault files.
final class ReadSnapshotTests: XCTestCase {
    var scratch: Scratch!
    override func setUpWithError() throws { scratch = try Scratch() }
    override func tearDown() { scratch = nil }

    func testAnIdleReaderKeepsItsSnapshotUntilTheNextCommit() throws {
        let vault = try scratch.makeVault()
        vault.keepsReadSnapshots = true
        try vault.addPassword(service: "db", account: "app", secret: "one")
        XCTAssertEqual(try vault.password(service: "db", account: "app"), "one")
        XCTAssertEqual(vault.readers.idleSnapshots, 1, "the reader keeps its snapshot for the next search")
        XCTAssertEqual(try vault.password(service: "db", account: "app"), "one")
        try vault.update(["class": "genp", "svce": "db", "acct": "app"], changes: [:], secret: secret("two"), accessGroups: groups)
        XCTAssertEqual(vault.readers.idleSnapshots, 0, "a commit ends the idle readers' snapshots")
        XCTAssertEqual(try vault.password(service: "db", account: "app"), "two")
    }

    /// A commit made while a reader is busy (so not among the idle readers it ends) is seen by
    /// that reader's next search.
    func testAReaderBusyDuringACommitSeesItNextTime() throws {
        let vault = try scratch.makeVault()
        vault.keepsReadSnapshots = true
        try vault.addPassword(service: "db", account: "app", secret: "one")
        let reader = try XCTUnwrap(vault.readers.take())
        XCTAssertEqual(try reader.store.db.scalarInt("SELECT count(*) FROM items"), 1)
        XCTAssertTrue(reader.store.db.inTransaction)
        try vault.addPassword(service: "db", account: "later", secret: "two")
        vault.readers.give(reader)
        XCTAssertEqual(try vault.password(service: "db", account: "later"), "two")
        XCTAssertEqual(try vault.password(service: "db", account: "app"), "one")
    }

    /// Turned off, a reader's kept snapshot ends before its next search, which sees every commit.
    func testTurningSnapshotsOffEndsTheKeptOnes() throws {
        let vault = try scratch.makeVault()
        vault.keepsReadSnapshots = true
        try vault.addPassword(service: "db", account: "app", secret: "one")
        let reader = try XCTUnwrap(vault.readers.take())
        XCTAssertEqual(try reader.store.db.scalarInt("SELECT count(*) FROM items"), 1)
        vault.readers.give(reader)
        vault.keepsReadSnapshots = false
        // A commit through another connection, which the pool does not count.
        let other = try Connection(path: vault.path, create: false)
        try other.execute("UPDATE items SET version = version + 1")
        let again = try XCTUnwrap(vault.readers.take())
        XCTAssertFalse(again.store.db.inTransaction)
        XCTAssertEqual(try again.store.db.scalarInt("SELECT count(*) FROM items WHERE version > 1"), 1)
        vault.readers.give(again)
    }

    func testReadersHoldNoSnapshotUnlessAsked() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "one")
        XCTAssertEqual(try vault.password(service: "db", account: "app"), "one")
        XCTAssertEqual(vault.readers.idleSnapshots, 0)
    }

    /// A reader left idle with a snapshot would keep every later frame in the WAL (no
    /// checkpoint can pass it, and the WAL cannot start over): the commit ends it, so the WAL
    /// stays near SQLite's checkpoint size however many writes follow one search.
    func testASearchFollowedByManyWritesLeavesTheWALBounded() throws {
        let vault = try scratch.makeVault()
        vault.keepsReadSnapshots = true
        try vault.addPassword(service: "db", account: "first", secret: "one")
        XCTAssertEqual(try vault.password(service: "db", account: "first"), "one")
        for i in 0..<1500 {
            try vault.addPassword(service: "many", account: "a\(i)", secret: String(repeating: "x", count: 200))
        }
        let wal = (try FileManager.default.attributesOfItem(atPath: vault.path + "-wal")[.size] as? NSNumber)?.intValue ?? 0
        XCTAssertLessThan(wal, 8 << 20, "WAL of \(wal) bytes after 1,500 commits")
        XCTAssertEqual(try vault.password(service: "many", account: "a1499"), String(repeating: "x", count: 200))
    }
}
