@testable import KeychainCore
import KeychainTestSupport
import SQLiteStore
import XCTest

/// A listing of a large directory reads every page of it once: past its first rows the
/// connection it runs on keeps a small page cache, and has its usual cache size again after.
/// Real vault files, real SQLite page caches (`sqlite3_db_status`).
final class ListingCacheTests: XCTestCase {
    var scratch: Scratch!
    override func setUpWithError() throws { scratch = try Scratch() }
    override func tearDown() { scratch = nil }

    /// More items than `ItemStore.longScanRows`, with attributes large enough that their pages
    /// exceed the bounded cache several times over.
    func makeLargeService() throws -> Vault {
        let vault = try scratch.makeVault()
        let n = ItemStore.longScanRows + 2_000
        try vault.addAll((0..<n).map { i in
            (["class": "genp", "svce": "big", "acct": .string("account \(i)"), "labl": .string(String(repeating: "l", count: 400))],
             try secret("secret \(i)"))
        }, accessGroups: groups)
        return vault
    }

    func cacheKiB(_ db: Connection) throws -> Int64? { try db.scalarInt("PRAGMA cache_size").map { -$0 } }

    func listAll(_ vault: Vault) throws -> Int {
        var count = 0
        try vault.forEachFileEntry(service: Array("big".utf8), accessGroups: groups, keepRows: false) { _ in count += 1; return true }
        return count
    }

    func testALongListingLeavesItsReaderWithASmallCacheAndItsUsualSize() throws {
        let vault = try makeLargeService()
        XCTAssertEqual(try listAll(vault), ItemStore.longScanRows + 2_000)
        guard let reader = vault.readers.take() else { return XCTFail("no reader") }
        defer { vault.readers.give(reader) }
        XCTAssertEqual(try cacheKiB(reader.store.db), Int64(ItemStore.cacheKiB), "the usual size again")
        XCTAssertLessThanOrEqual(reader.store.db.pageCacheBytes, (ItemStore.scanCacheKiB + 256) * 1024, "no more than the scan's bound")

        // The same rows read one at a time fill more than the bound: the bound is the listing's alone.
        for rowid in 1...(ItemStore.longScanRows + 2_000) {
            _ = try reader.store.db.scalarInt("SELECT length(attrs) FROM items WHERE rowid = \(rowid)")
        }
        let scanned = reader.store.db.pageCacheBytes
        XCTAssertGreaterThan(scanned, 2 * ItemStore.scanCacheKiB * 1024, "the rows' pages are more than the bound")
    }

    /// On the write connection (every reader busy), inside a long read's larger write cache,
    /// a listing gives back the size it found, not the default.
    func testALongListingOnTheWriteConnectionGivesBackTheSizeItFound() throws {
        let vault = try makeLargeService()
        vault.readers.limit = 0
        defer { vault.readers.limit = ReaderPool.defaultLimit }
        XCTAssertEqual(try listAll(vault), ItemStore.longScanRows + 2_000)
        XCTAssertEqual(try cacheKiB(vault.store.db), Int64(ItemStore.cacheKiB))
        try vault.withLargeWriteCache(64) {
            XCTAssertEqual(try listAll(vault), ItemStore.longScanRows + 2_000)
            XCTAssertEqual(try cacheKiB(vault.store.db), 65536)
        }
    }

    /// A short listing leaves the cache alone: the pages lookups keep stay.
    func testAShortListingKeepsTheCache() throws {
        let vault = try scratch.makeVault()
        try vault.addAll((0..<100).map { i in (["class": "genp", "svce": "big", "acct": .string("a\(i)")], try secret("s\(i)")) },
                         accessGroups: groups)
        XCTAssertEqual(try listAll(vault), 100)
        guard let reader = vault.readers.take() else { return XCTFail("no reader") }
        defer { vault.readers.give(reader) }
        XCTAssertEqual(try cacheKiB(reader.store.db), Int64(ItemStore.cacheKiB))
    }
}
