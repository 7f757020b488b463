@testable import KeychainCore
import Foundation
import KeychainCrypto
import SQLiteStore
import XCTest

/// A search that names its class's whole primary key looks the item up by its `pk_token`
/// (`Vault.search`). These tests empty the `tokens` table first, so the attribute-token search
/// finds nothing and only the point lookup can: an item found proves that the token the query
/// computed is the one `seal` stored, for items written by every path.
final class PrimaryKeyLookupTests: XCTestCase {
    var scratch: Scratch!
    override func setUpWithError() throws { scratch = try Scratch() }
    override func tearDown() { scratch = nil }

    /// Deletes every attribute token of the vault file `path` (a second connection, as a tamperer would).
    func dropAttributeTokens(_ path: String) throws {
        try Connection(path: path, create: false).execute("DELETE FROM tokens")
    }

    func secretOf(_ vault: Vault, _ query: Attributes, groups: [String] = groups) throws -> String {
        var q = query
        q[.returnData] = true
        guard let data = try vault.copyMatching(q, accessGroups: groups).value?.data else { throw KeychainStatus.decode }
        return data.string
    }

    func testEveryWayOfAddingAnItemGivesTheTokenASearchComputes() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "one", secret: "by add")
        try vault.addAll([(["class": "genp", "svce": "db", "acct": "two"], try secret("by addAll")),
                          (["class": "genp", "svce": "db", "acct": "three", "agrp": "app.shared"], try secret("in a group"))],
                         accessGroups: groups)
        try vault.addPassword(service: "old", account: "four", secret: "by update")
        try vault.update(["class": "genp", "svce": "old", "acct": "four"], changes: ["svce": "db", "acct": "moved", "agrp": "app.shared"],
                         accessGroups: groups)
        try vault.addPassword(service: "db", account: "synced", secret: "synchronizable", ["sync": true])
        // Internet passwords: every attribute of the key, or some missing (empty), number as text.
        try vault.add(["class": "inet", "srvr": "db.example", "acct": "admin", "ptcl": "htps", "port": 5432, "path": "/x",
                       "sdmn": "corp", "atyp": "dflt"], secret: secret("full inet"), accessGroups: groups)
        try vault.add(["class": "inet", "srvr": "db.example", "acct": "guest"], secret: secret("sparse inet"), accessGroups: groups)
        try dropAttributeTokens(scratch.path())

        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "db", "acct": "one"]), "by add")
        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "db", "acct": "two"]), "by addAll")
        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "db", "acct": "three"]), "in a group")
        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "db", "acct": "moved", "agrp": "app.shared"]), "by update")
        XCTAssertStatus(.itemNotFound, try secretOf(vault, ["class": "genp", "svce": "old", "acct": "four"]))
        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "db", "acct": "synced", "sync": "syna"]), "synchronizable")
        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "db", "acct": "synced", "sync": 1]), "synchronizable")
        XCTAssertStatus(.itemNotFound, try secretOf(vault, ["class": "genp", "svce": "db", "acct": "synced"]))  // sync 0 by default
        // A string and its bytes are the same value; a number given as text is the number.
        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": .data(Array("db".utf8)), "acct": "one"]), "by add")
        XCTAssertEqual(try secretOf(vault, ["class": "inet", "srvr": "db.example", "acct": "admin", "ptcl": "htps", "port": "5432",
                                            "path": "/x", "sdmn": "corp", "atyp": "dflt"]), "full inet")
        // A missing attribute is its empty value: a text one given as a string or as data, a
        // number one as 0.
        XCTAssertEqual(try secretOf(vault, ["class": "inet", "srvr": "db.example", "acct": "guest", "ptcl": 0, "port": 0,
                                            "path": .data([]), "sdmn": "", "atyp": ""]), "sparse inet")
    }

    func testItemsFromABackupAndFromSyncAreFoundByTheirKey() throws {
        let source = try scratch.makeVault("source.vault")
        try source.addPassword(service: "db", account: "backed-up", secret: "from the backup", ["pdmn": "ck"])
        try source.addPassword(service: "db", account: "from-another-host", secret: "from sync", ["sync": true, "pdmn": "ck"])
        let backup = try source.exportBackup(passphrase: secret("backup"), kdf: .minimum)
        let r = try source.copyMatching(["class": "genp", "acct": "from-another-host", "sync": 1, "r_PersistentRef": true],
                                        accessGroups: groups)
        guard case .persistentRef(let bytes)? = r.value, let ref = PersistentRef(bytes: bytes) else { return XCTFail("\(r)") }
        let payload = try XCTUnwrap(try source.syncPayload(uuid: ref.uuid))

        let vault = try scratch.makeVault()
        _ = try vault.importBackup(backup.bytes, passphrase: secret("backup"))
        try dropAttributeTokens(scratch.path())
        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "db", "acct": "backed-up"]), "from the backup")
        _ = try vault.applySynced(payload, serverVersion: 1)
        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "db", "acct": "from-another-host", "sync": 1]), "from sync")
    }

    /// The frozen format-1 vault: rows written by an older build, with a version-1 schema.
    func testTheFrozenFormatOneVaultIsFoundByItsKeys() throws {
        let source = try XCTUnwrap(Bundle.module.path(forResource: "vault-v1", ofType: nil, inDirectory: "Fixtures"))
        let path = scratch.path("fixture.vault")
        try FileManager.default.copyItem(atPath: source + "/fixture.vault", toPath: path)
        try FileManager.default.copyItem(atPath: source + "/device.key", toPath: scratch.dir + "/fixture-device.key")
        try dropAttributeTokens(path)
        let vault = try Vault.open(at: path, deviceKey: try DeviceKey.loadOrCreate(at: scratch.dir + "/fixture-device.key"))
        try vault.unlock(passphrase: secret(FixtureTests.passphrase))
        let g = ["fixture.group"]
        for (account, _, value) in FixtureTests.genericItems {
            XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "fixture", "acct": .string(account)], groups: g), value)
        }
        XCTAssertEqual(try secretOf(vault, ["class": "genp", "svce": "fixture", "acct": "synced", "sync": "syna"], groups: g),
                       "fixture synced")
        XCTAssertEqual(try secretOf(vault, ["class": "inet", "srvr": "db.example", "acct": "admin", "ptcl": "htps", "port": 5432,
                                            "path": "/x", "sdmn": "", "atyp": ""], groups: g), "fixture inet")
    }

    /// Several groups and both synchronizable values: insertion order across them, and the
    /// limit taken in that order.
    func testResultsComeInInsertionOrderAcrossGroupsAndSyncValues() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "shared, first", ["agrp": "app.shared"])
        try vault.addPassword(service: "db", account: "app", secret: "default, synced", ["sync": true])
        try vault.addPassword(service: "db", account: "app", secret: "default, second")
        try dropAttributeTokens(scratch.path())
        let query: Attributes = ["class": "genp", "svce": "db", "acct": "app", "sync": "syna", "r_Data": true]
        var all = query
        all[.matchLimit] = .matchLimitAll
        let found = try vault.copyMatching(all, accessGroups: groups).array?.compactMap { $0.data?.string }
        XCTAssertEqual(found, ["shared, first", "default, synced", "default, second"])
        XCTAssertEqual(try vault.copyMatching(query, accessGroups: groups).value?.data?.string, "shared, first")
        var two = query
        two[.matchLimit] = 2
        XCTAssertEqual(try vault.copyMatching(two, accessGroups: groups).array?.compactMap { $0.data?.string },
                       ["shared, first", "default, synced"])
        XCTAssertEqual(try vault.copyMatching(query, accessGroups: ["app.default", "app.shared"].reversed()).value?.data?.string,
                       "shared, first", "the order of the caller's groups does not matter")
    }

    func testStatusesAreThoseOfTheTokenSearch() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "locked", secret: "a")
        try vault.addPassword(service: "db", account: "damaged", secret: "b", ["pdmn": "ck"])
        try vault.addPassword(service: "db", account: "gated", secret: "c", ["accc": "ak;1"])
        let db = try Connection(path: scratch.path(), create: false)
        try db.execute("UPDATE items SET attrs = zeroblob(length(attrs)) WHERE rowid = 2")
        XCTAssertStatus(.itemNotFound, try secretOf(vault, ["class": "genp", "svce": "db", "acct": "nobody"]))
        XCTAssertStatus(.decode, try secretOf(vault, ["class": "genp", "svce": "db", "acct": "damaged"]))
        XCTAssertStatus(.interactionNotAllowed, try secretOf(vault, ["class": "genp", "svce": "db", "acct": "gated"]))
        XCTAssertStatus(.missingEntitlement, try secretOf(vault, ["class": "genp", "svce": "db", "acct": "locked", "agrp": "other"]))
        XCTAssertStatus(.itemNotFound, try secretOf(vault, ["class": "genp", "svce": "db", "acct": "locked"], groups: []))
        vault.lock()
        XCTAssertStatus(.interactionNotAllowed, try secretOf(vault, ["class": "genp", "svce": "db", "acct": "locked"]))
        XCTAssertStatus(.decode, try secretOf(vault, ["class": "genp", "svce": "db", "acct": "damaged"]))
    }

    /// Primary-key tokens swapped between two rows: each lookup meets the other's row, whose
    /// attributes do not match, and the token search still finds the right one.
    func testSwappedPrimaryKeyTokensStillFindEachItem() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "s", account: "one", secret: "first")
        try vault.addPassword(service: "s", account: "two", secret: "second")
        let db = try Connection(path: scratch.path(), create: false)
        let st = try db.prepare("SELECT pk_token FROM items ORDER BY rowid")
        var tokens: [[UInt8]] = []
        while try st.step() { tokens.append(st.blob(0) ?? []) }
        st.reset()
        // Through a placeholder: the column is unique.
        for (rowid, token) in [(2, [UInt8](repeating: 0, count: 32)), (1, tokens[1]), (2, tokens[0])] {
            try db.prepare("UPDATE items SET pk_token = ? WHERE rowid = ?").bind(.blob(token), .integer(Int64(rowid))).run()
        }
        XCTAssertEqual(try vault.password(service: "s", account: "one"), "first")
        XCTAssertEqual(try vault.password(service: "s", account: "two"), "second")
    }
}
