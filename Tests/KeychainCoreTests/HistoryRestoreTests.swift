@testable import KeychainCore
import KeychainCrypto
import XCTest

/// `Vault.restoreFromHistory` (docs/sync.md, "Conflicts"): a kept version comes back as a change
/// made here, which the next round sends.
final class HistoryRestoreTests: XCTestCase {
    var scratch: Scratch!
    override func setUpWithError() throws { scratch = try Scratch() }
    override func tearDown() { scratch = nil }

    let item: Attributes = ["class": "genp", "svce": "db", "acct": "shared", "sync": 1]

    func secretHere(_ vault: Vault) throws -> String {
        var q = item
        q[.returnData] = true
        guard let data = try vault.copyMatching(q, accessGroups: groups).value?.data else { throw KeychainStatus.decode }
        return data.string
    }

    /// Another host's item as sync carries it, with `secret`.
    func payload(from source: Vault, secret s: String) throws -> SyncPayload {
        if (try? secretHere(source)) == nil {
            try source.addPassword(service: "db", account: "shared", secret: s, ["sync": true])
        } else {
            _ = try source.update(item, changes: [:], secret: secret(s), accessGroups: groups)
        }
        let uuid = try XCTUnwrap(try source.syncChanges().changed.first?.uuid)
        return try XCTUnwrap(try source.syncPayload(uuid: uuid))
    }

    /// The vault receives the item (server version 1), then changes it here, unsent.
    func receivedThenChanged(_ vault: Vault, _ source: Vault) throws -> [UInt8] {
        let p = try payload(from: source, secret: "from sync")
        _ = try vault.applySynced(p, serverVersion: 1)
        _ = try vault.update(item, changes: [:], secret: secret("changed here"), accessGroups: groups)
        return p.uuid
    }

    func testALoserToTheServersOrderIsWrittenOverTheWinnerAndSent() throws {
        let vault = try scratch.makeVault(), source = try scratch.makeVault("source.vault")
        let uuid = try receivedThenChanged(vault, source)
        _ = try vault.applySynced(try payload(from: source, secret: "winner"), serverVersion: 2)
        XCTAssertEqual(try secretHere(vault), "winner")
        let kept = try vault.history(service: nil, account: nil, secrets: true)
        XCTAssertEqual(kept.map { $0.secret?.string }, ["changed here"])
        XCTAssertEqual(kept.first?.reason, .serverOrder)

        let restored = try vault.restoreFromHistory(id: try XCTUnwrap(kept.first?.id))
        XCTAssertFalse(restored.added)
        XCTAssertEqual(try secretHere(vault), "changed here")
        let changed = try vault.syncChanges().changed
        XCTAssertEqual(changed.map(\.uuid), [uuid], "the same item, to send over the server's version")
        XCTAssertEqual(changed.first?.state?.serverVersion, 2)
        XCTAssertEqual(try vault.history(service: nil, account: nil, secrets: false).count, 1, "the version stays kept")
    }

    func testALoserToADeleteComesBackAsANewItem() throws {
        let vault = try scratch.makeVault(), source = try scratch.makeVault("source.vault")
        let uuid = try receivedThenChanged(vault, source)
        _ = try vault.applySynced([.delete(uuid: uuid)])
        XCTAssertStatus(.itemNotFound, try secretHere(vault))
        let kept = try XCTUnwrap(try vault.history(service: "db".bytes, account: nil, secrets: false).first)

        XCTAssertTrue(try vault.restoreFromHistory(id: kept.id).added)
        XCTAssertEqual(try secretHere(vault), "changed here")
        let changed = try vault.syncChanges().changed
        XCTAssertEqual(changed.count, 1)
        XCTAssertNotEqual(changed.first?.uuid, uuid, "a new uuid: the server may still hold the old one's tombstone")
        XCTAssertNil(changed.first?.state)
    }

    func testAnUnknownIdOrALockedClassKeyIsRefused() throws {
        let vault = try scratch.makeVault(), source = try scratch.makeVault("source.vault")
        _ = try receivedThenChanged(vault, source)
        _ = try vault.applySynced(try payload(from: source, secret: "winner"), serverVersion: 2)
        let id = try XCTUnwrap(try vault.history(service: nil, account: nil, secrets: false).first?.id)
        XCTAssertStatus(.itemNotFound, try vault.restoreFromHistory(id: id + 1))
        vault.lock()
        XCTAssertStatus(.interactionNotAllowed, try vault.restoreFromHistory(id: id))
        try vault.unlock(passphrase: secret("correct horse"))
        XCTAssertEqual(try secretHere(vault), "winner", "nothing written while locked")
        _ = try vault.restoreFromHistory(id: id)
        XCTAssertEqual(try secretHere(vault), "changed here")
    }
}

private extension String {
    var bytes: [UInt8] { Array(utf8) }
}
