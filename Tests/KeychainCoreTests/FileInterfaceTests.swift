@testable import KeychainCore
import KeychainCrypto
import XCTest

/// What the mount asks of the vault: names, listings, sizes and times, without secrets.
final class FileInterfaceTests: XCTestCase {
    func testEscapingRoundTripsAndIsCanonical() {
        let cases: [([UInt8], String, Bool)] = [
            (Array("app".utf8), "app", false),
            ([], "%", false),
            (Array(".".utf8), "%2E", false),
            (Array("..".utf8), "%2E.", false),
            (Array(".hidden".utf8), ".hidden", false),
            (Array(".hidden".utf8), "%2Ehidden", true),
            (Array("a/b".utf8), "a%2Fb", false),
            (Array("50%".utf8), "50%25", false),
            ([0x61, 0x00, 0x62], "a%00b", false),
            (Array("ünïcødé".utf8), "ünïcødé", false),
        ]
        for (value, name, top) in cases {
            XCTAssertEqual(FileNames.escape(value, topLevel: top), Array(name.utf8), name)
            XCTAssertEqual(FileNames.unescape(Array(name.utf8), topLevel: top), value, name)
        }
        // Invalid UTF-8 passes through as bytes.
        XCTAssertEqual(FileNames.unescape(FileNames.escape([0xff, 0xfe])), [0xff, 0xfe])
        // Non-canonical spellings are not accepted: every value has one name.
        XCTAssertNil(FileNames.unescape(Array("%61pp".utf8)))
        XCTAssertNil(FileNames.unescape(Array("a%2fb".utf8)))
        XCTAssertNil(FileNames.unescape(Array("bad%".utf8)))
        XCTAssertNil(FileNames.unescape(Array(".x".utf8), topLevel: true))
    }

    /// A name that escapes nothing is parsed without escaping it again: the same item, or none,
    /// as the canonical spelling gives.
    func testPlainItemNamesParseAsTheirSpelling() {
        let long = String(repeating: "a", count: 255), tooLong = String(repeating: "a", count: 256)
        for file in ["app", "a1234", ".hidden", "ünïcødé", long, ".", "..", "", "a/b", "50%25", "%", tooLong] {
            for c in [ItemClass.genericPassword, .internetPassword] {
                let parsed = FileNames.itemName(Array(file.utf8), service: Array("db".utf8), itemClass: c)
                let value = FileNames.unescape(Array(file.utf8))
                XCTAssertEqual(parsed?.account, value, file)
                if let parsed { XCTAssertEqual(FileNames.fileName(of: parsed), Array(file.utf8), file) }
            }
        }
        XCTAssertTrue(FileNames.isPlain(Array("a1234".utf8)))
        XCTAssertFalse(FileNames.isPlain(Array("50%25".utf8)))
        XCTAssertFalse(FileNames.isPlain(Array("..".utf8)))
    }

    func testLongNamesAreHashedAndDistinct() {
        let long1 = [UInt8](repeating: 0x61, count: 300), long2 = [UInt8](repeating: 0x62, count: 300)
        let n1 = FileNames.escape(long1), n2 = FileNames.escape(long2)
        XCTAssertLessThanOrEqual(n1.count, 255)
        XCTAssertTrue(n1.starts(with: Array("%H".utf8)))
        XCTAssertNotEqual(n1, n2)
        XCTAssertNil(FileNames.unescape(n1), "resolved by lookup, not by decoding")
        XCTAssertEqual(FileNames.escape([UInt8](repeating: 0x61, count: 255)).count, 255)
    }

    func testFileEntriesListSizesAndVanishOnLock() throws {
        let scratch = try Scratch()
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "hunter2")
        try vault.addPassword(service: "db", account: "cache", secret: "123456", ["pdmn": "ck"])
        try vault.addPassword(service: "web", account: "admin", secret: "x")
        let db = try vault.fileEntries(service: Array("db".utf8), accessGroups: groups)
        XCTAssertEqual(db.map { String(decoding: $0.account, as: UTF8.self) }, ["app", "cache"])
        XCTAssertEqual(db.map(\.size), [7, 6])
        XCTAssertEqual(try vault.fileEntries(accessGroups: groups).count, 3)
        XCTAssertEqual(try vault.fileEntries(accessGroups: ["app.shared"]).count, 0)
        vault.lock()
        XCTAssertEqual(try vault.fileEntries(service: Array("db".utf8), accessGroups: groups).map(\.size), [6])
        XCTAssertStatus(.interactionNotAllowed, try vault.readSecret(of: db[0].ref, accessGroups: groups))
        XCTAssertEqual(try vault.readSecret(of: db[1].ref, accessGroups: groups).string, "123456")
    }

    func testFileOpensKeepItemKeysOnlyUntilLockAndMissOnAChange() throws {
        let scratch = try Scratch()
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "hunter2")
        try vault.addPassword(service: "db", account: "cache", secret: "123456", ["pdmn": "ck"])
        let first = try vault.fileEntries(service: Array("db".utf8), accessGroups: groups)
        for _ in 0..<3 {
            XCTAssertEqual(try vault.fileSecret(of: first[0], accessGroups: groups).string, "hunter2")
            XCTAssertEqual(try vault.fileSecret(of: first[1], accessGroups: groups).string, "123456")
        }
        XCTAssertEqual(vault.openedItemKeys.withLock { $0.count }, 2, "one kept key per item, however often read")
        // A listing leaves rows out and says so; a search for the file keeps it.
        var listed: [FileEntry] = []
        try vault.forEachFileEntry(service: Array("db".utf8), accessGroups: groups, keepRows: false) { listed.append($0); return true }
        XCTAssertEqual(listed.map(\.rowLeftOut), [true, true])
        XCTAssertEqual(first.map(\.rowLeftOut), [false, false])
        XCTAssertEqual(try vault.fileSecret(of: listed[0], accessGroups: groups).string, "hunter2", "a listed entry still opens")
        // A new secret is sealed under a new item key: the kept one does not match it.
        try vault.update(["class": "genp", "acct": "app"], changes: [:], secret: secret("two"), accessGroups: groups)
        let second = try vault.fileEntries(service: Array("db".utf8), accessGroups: groups)
        XCTAssertEqual(try vault.fileSecret(of: second[0], accessGroups: groups).string, "two")
        vault.lock()
        XCTAssertTrue(vault.openedItemKeys.withLock { $0.isEmpty }, "every kept key is wiped at the lock")
        XCTAssertStatus(.interactionNotAllowed, try vault.fileSecret(of: second[0], accessGroups: groups))
        XCTAssertEqual(try vault.fileSecret(of: first[1], accessGroups: groups).string, "123456", "AfterFirstUnlock still reads")
    }

    /// A file name's entry (what the mount's lookup keeps) opens its secret at once, under the
    /// same rules as a search: the caller's groups, the lock, a changed secret.
    func testANamesEntryOpensItsSecretUnderTheSameRules() throws {
        let scratch = try Scratch()
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "hunter2")
        try vault.addPassword(service: "db", account: "cache", secret: "123456", ["pdmn": "ck"])
        let name = ItemName(service: Array("db".utf8), account: Array("app".utf8))
        let app = try XCTUnwrap(vault.fileEntries(named: name, accessGroups: groups, limit: 1,
                                                  attributes: Vault.fileSelection([.modificationDate])).first)
        XCTAssertEqual(app.name, name)
        XCTAssertEqual(app.size, 7)
        XCTAssertFalse(app.rowLeftOut)
        XCTAssertEqual(try vault.fileSecret(of: app, accessGroups: groups).string, "hunter2")
        XCTAssertStatus(.itemNotFound, try vault.fileSecret(of: app, accessGroups: ["app.shared"]))
        let cacheName = ItemName(service: Array("db".utf8), account: Array("cache".utf8))
        let cache = try XCTUnwrap(vault.fileEntries(named: cacheName, accessGroups: groups).first)
        // A new secret: a fresh search's entry reads it.
        try vault.update(["class": "genp", "acct": "app"], changes: [:], secret: secret("two"), accessGroups: groups)
        let second = try XCTUnwrap(vault.fileEntries(named: name, accessGroups: groups, limit: 1).first)
        XCTAssertEqual(try vault.fileSecret(of: second, accessGroups: groups).string, "two")
        vault.lock()
        XCTAssertStatus(.interactionNotAllowed, try vault.fileSecret(of: second, accessGroups: groups))
        XCTAssertEqual(try vault.fileSecret(of: cache, accessGroups: groups).string, "123456", "AfterFirstUnlock still reads")
    }

    func testSecretModificationTimeMovesOnlyWithTheSecret() throws {
        let scratch = try Scratch()
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "one")
        let first = try XCTUnwrap(vault.fileEntries(accessGroups: groups).first)
        usleep(1_100_000)
        try vault.update(["class": "genp", "acct": "app"], changes: ["labl": "relabelled"], accessGroups: groups)
        let relabelled = try XCTUnwrap(vault.fileEntries(accessGroups: groups).first)
        XCTAssertEqual(relabelled.attributes[Vault.secretModified], first.attributes[Vault.secretModified])
        XCTAssertNotEqual(relabelled.attributes["mdat"], first.attributes["mdat"])
        XCTAssertEqual(relabelled.version, 2)
        try vault.update(["class": "genp", "acct": "app"], changes: [:], secret: secret("two"), accessGroups: groups)
        let rewritten = try XCTUnwrap(vault.fileEntries(accessGroups: groups).first)
        XCTAssertNotEqual(rewritten.attributes[Vault.secretModified], first.attributes[Vault.secretModified])
        // Store-private attributes never reach a caller.
        let r = try vault.copyMatching(["class": "genp", "r_Attributes": true], accessGroups: groups)
        XCTAssertNil(r.value?.item?.attributes[Vault.secretModified])
    }
}
