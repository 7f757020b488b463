@testable import KeychainCore
import KeychainCrypto
import XCTest

/// `Vault.prepareSynced` (docs/sync.md, "A new host"): another host's items sealed for this
/// vault ahead of their write, as a new host's long read does on its second thread. What is
/// written is what `applySynced` alone writes; a lock in between makes the write wait as it
/// would, and after the unlock the items are sealed again with the keys in force.
final class SyncPreparedApplyTests: XCTestCase {
    var scratch: Scratch!
    override func setUpWithError() throws { scratch = try Scratch() }
    override func tearDown() { scratch = nil }

    /// `count` synchronizable items of another vault, as sync carries them.
    func changes(_ count: Int) throws -> [SyncChange] {
        let source = try scratch.makeVault("source.vault")
        for n in 0..<count {
            try source.addPassword(service: "prepared", account: "acct-\(n)", secret: "secret \(n)", ["sync": true])
        }
        return try source.syncChanges().changed.map { .write(try XCTUnwrap(try source.syncPayload(uuid: $0.uuid)), serverVersion: 1) }
    }

    func secretHere(_ vault: Vault, _ account: String) throws -> String? {
        let found = try? vault.copyMatching(["class": "genp", "svce": "prepared", "acct": .string(account), "sync": 1,
                                             .returnData: true], accessGroups: groups)
        return found?.value?.data?.string
    }

    func testAPreparedBatchIsWrittenAsWithoutAndLeavesNothingToSend() throws {
        let vault = try scratch.makeVault()
        let batch = try changes(3)
        let prepared = vault.prepareSynced(batch)
        XCTAssertEqual(prepared.filter { $0.item != nil }.count, 3)
        let applied = try vault.applySynced(batch, prepared: prepared)
        XCTAssertEqual(applied.compactMap { $0?.names.first?.account }.map { String(decoding: $0, as: UTF8.self) },
                       ["acct-0", "acct-1", "acct-2"])
        for n in 0..<3 { XCTAssertEqual(try secretHere(vault, "acct-\(n)"), "secret \(n)") }
        let (changed, gone) = try vault.syncChanges()
        XCTAssertTrue(changed.isEmpty && gone.isEmpty, "what came from the server is in step with it")
        XCTAssertEqual(try vault.store.db.scalarInt("SELECT count(*) FROM sync_dirty"), 0, "nothing for the next round to look at")

        // A change made here afterwards is still found and sent.
        _ = try vault.update(["class": "genp", "svce": "prepared", "acct": "acct-1", "sync": 1], changes: [:],
                             secret: secret("changed here"), accessGroups: groups)
        XCTAssertEqual(try vault.syncChanges().changed.count, 1)
    }

    func testALockBetweenPreparingAndWritingWaitsAndTheUnlockSealsAgain() throws {
        let vault = try scratch.makeVault()
        let batch = try changes(2)
        let prepared = vault.prepareSynced(batch)
        vault.lock()
        XCTAssertThrowsError(try vault.applySynced(batch, prepared: prepared)) {
            XCTAssertEqual($0 as? KeychainStatus, .interactionNotAllowed, "the class key is gone: the write waits")
        }
        try vault.unlock(passphrase: secret("correct horse"))
        XCTAssertNil(vault.usablePrepared(prepared[0], try XCTUnwrap(payload(batch[0]))),
                     "sealed with a key the lock wiped: not used")
        _ = try vault.applySynced(batch, prepared: prepared)
        for n in 0..<2 { XCTAssertEqual(try secretHere(vault, "acct-\(n)"), "secret \(n)") }
    }

    func testAPayloadTheVaultRefusesIsNotPreparedAndIsRefusedAsBefore() throws {
        let vault = try scratch.makeVault()
        guard case .write(let p, _) = try changes(1)[0] else { return XCTFail("a write") }
        let forged = SyncPayload(uuid: p.uuid, itemClass: p.itemClass, protection: .whenUnlockedThisDeviceOnly,
                                 attributes: p.attributes, secret: p.secret)
        let batch: [SyncChange] = [.write(forged, serverVersion: 1)]
        let prepared = vault.prepareSynced(batch)
        XCTAssertNil(prepared[0].item)
        XCTAssertThrowsError(try vault.applySynced(batch, prepared: prepared)) {
            XCTAssertEqual($0 as? KeychainStatus, .decode)
        }
        XCTAssertNil(try secretHere(vault, "acct-0"))
    }

    /// A batch's new rows have their lookup tokens and sync states written at its end, in key
    /// order: a later change to one of them in the same batch (a new version, a delete, an item
    /// of another uuid with its primary key) finds the vault as when each is written at once.
    func testABatchTouchingItsOwnNewRowsEndsAsOneChangeAtATime() throws {
        let source = try scratch.makeVault("source.vault")
        for n in 0..<6 {
            try source.addPassword(service: "prepared", account: "acct-\(n)", secret: "secret \(n)", ["sync": true])
        }
        func payloads() throws -> [SyncPayload] {
            try source.syncChanges().changed.map { try XCTUnwrap(try source.syncPayload(uuid: $0.uuid)) }
        }
        let first = try payloads()
        _ = try source.update(["class": "genp", "svce": "prepared", "acct": "acct-1", "sync": 1], changes: ["acct": "renamed"],
                              secret: secret("new secret"), accessGroups: groups)
        let renamed = try XCTUnwrap(try payloads().first { $0.uuid == first[1].uuid })
        // Another uuid with acct-3's primary key: the lower uuid stays.
        let twin = SyncPayload(uuid: [UInt8](repeating: 0, count: 16), itemClass: first[3].itemClass,
                               protection: first[3].protection, attributes: first[3].attributes, secret: try secret("twin"))
        let batch: [SyncChange] = first.map { .write($0, serverVersion: 1) }
            + [.write(renamed, serverVersion: 2), .delete(uuid: first[2].uuid), .write(twin, serverVersion: 1),
               .write(first[4], serverVersion: 3)]

        let together = try scratch.makeVault("together.vault"), alone = try scratch.makeVault("alone.vault")
        _ = try together.applySynced(batch, prepared: together.prepareSynced(batch))
        for c in batch { _ = try alone.applySynced([c]) }
        for vault in [together, alone] {
            XCTAssertEqual(try secretHere(vault, "renamed"), "new secret")
            XCTAssertNil(try secretHere(vault, "acct-1"), "its old tokens are gone")
            XCTAssertNil(try secretHere(vault, "acct-2"), "deleted")
            XCTAssertEqual(try secretHere(vault, "acct-3"), "twin")
            for n in [0, 4, 5] { XCTAssertEqual(try secretHere(vault, "acct-\(n)"), "secret \(n)") }
            XCTAssertEqual(try vault.syncState(first[1].uuid)?.serverVersion, 2)
            XCTAssertEqual(try vault.syncState(first[4].uuid)?.serverVersion, 3)
            XCTAssertNil(try vault.syncState(first[2].uuid))
        }
        for q in ["SELECT count(*) FROM tokens", "SELECT count(*) FROM sync_dirty", "SELECT count(*) FROM sync_items", "SELECT count(*) FROM items",
                  "SELECT group_concat(server_version) FROM (SELECT server_version FROM sync_items ORDER BY uuid)",
                  "SELECT count(*) FROM tokens t LEFT JOIN items i ON i.rowid = t.item WHERE i.rowid IS NULL"] {
            XCTAssertEqual(try together.store.db.scalarText(q), try alone.store.db.scalarText(q), q)
        }
    }

    /// A long read's larger write cache lasts only as long as the read, whether it ends or throws.
    func testALongReadsWriteCacheIsGivenBackAfterItEvenWhenItThrows() throws {
        let vault = try scratch.makeVault()
        func cacheKiB() throws -> Int64? { try vault.store.db.scalarInt("PRAGMA cache_size").map { -$0 } }
        XCTAssertEqual(try cacheKiB(), 8192)
        try vault.withLargeWriteCache(64) { XCTAssertEqual(try cacheKiB(), 65536) }
        XCTAssertEqual(try cacheKiB(), 8192)
        XCTAssertThrowsError(try vault.withLargeWriteCache(64) { throw KeychainStatus.interactionNotAllowed })
        XCTAssertEqual(try cacheKiB(), 8192)
    }

    func payload(_ c: SyncChange) -> SyncPayload? {
        if case .write(let p, _) = c { return p }
        return nil
    }
}
