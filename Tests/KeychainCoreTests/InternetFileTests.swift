@testable import KeychainCore
import KeychainCrypto
import XCTest

/// Internet passwords as files (`/.internet/<server>/<account>`): one name per primary key,
/// found, listed, stored, renamed and deleted through the same file API as generic passwords.
final class InternetFileTests: XCTestCase {
    var scratch: Scratch!
    var vault: Vault!

    override func setUpWithError() throws {
        scratch = try Scratch()
        vault = try scratch.makeVault()
    }

    override func tearDown() {
        vault = nil
        scratch = nil
    }

    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func addInternet(_ server: String, _ account: String, _ secretText: String, _ extra: Attributes = [:]) throws {
        var attrs: Attributes = ["class": "inet", "srvr": .string(server), "acct": .string(account)]
        attrs.merge(extra) { _, b in b }
        try vault.add(attrs, secret: secret(secretText), accessGroups: groups)
    }

    func internetSecret(_ query: Attributes) throws -> String {
        var q = query
        q["class"] = "inet"
        q["r_Data"] = true
        guard let data = try vault.copyMatching(q, accessGroups: groups).value?.data else { throw KeychainStatus.decode }
        return data.string
    }

    func testNamesSpellEachQualifierAndRoundTrip() {
        let server = bytes("db.example.com")
        let cases: [(ItemName, String)] = [
            (ItemName(server: server, account: bytes("alice")), "alice"),
            (ItemName(server: server, account: bytes("alice"), qualifiers: ["port": .number(8443)]), "alice%~port=8443"),
            (ItemName(server: server, account: bytes("alice"), qualifiers: ["ptcl": "htps", "port": .number(443), "path": "/api"]),
             "alice%~ptcl=htps%~port=443%~path=%2Fapi"),
            (ItemName(server: server, account: bytes("a@b%~c"), qualifiers: ["sdmn": "corp", "atyp": "dflt"]),
             "a@b%25~c%~sdmn=corp%~atyp=dflt"),
            (ItemName(server: server, account: [], qualifiers: ["port": .number(22)]), "%%~port=22"),
            (ItemName(server: server, account: bytes(".."), qualifiers: ["port": .number(1)]), "%2E.%~port=1"),
            (ItemName(server: server, account: bytes(".x")), ".x"),
        ]
        for (name, file) in cases {
            XCTAssertEqual(String(decoding: FileNames.fileName(of: name), as: UTF8.self), file)
            let back = FileNames.itemName(bytes(file), service: server, itemClass: .internetPassword)
            XCTAssertEqual(back.map { FileNames.fileName(of: $0) }, bytes(file), file)
            XCTAssertEqual(back?.account, name.account, file)
        }
        // Zero and empty qualifiers are the plain name; other spellings do not exist.
        XCTAssertEqual(FileNames.fileName(of: ItemName(server: server, account: bytes("a"), qualifiers: ["port": .number(0), "path": ""])),
                       bytes("a"))
        for bad in ["a%~port=0", "a%~port=0443", "a%~port=1%~ptcl=htps", "a%~bogus=1", "a%~port=1%~port=2", "a%~port", "a%~path="] {
            XCTAssertNil(FileNames.itemName(bytes(bad), service: server, itemClass: .internetPassword), bad)
        }
        // A generic password's names are unchanged; `.internet` is not a service's name.
        XCTAssertEqual(FileNames.directoryName(bytes(".internet"), itemClass: .genericPassword), bytes("%2Einternet"))
        XCTAssertNil(FileNames.unescape(bytes(".internet"), topLevel: true))
        XCTAssertEqual(FileNames.unescape(bytes("%2Einternet"), topLevel: true), bytes(".internet"))
        // Long names are hashed whole.
        let long = ItemName(server: server, account: [UInt8](repeating: 0x61, count: 250), qualifiers: ["port": .number(1)])
        XCTAssertTrue(LongHashed.isHashed(FileNames.fileName(of: long)))
    }

    /// A name that carries its access group (an item sharing its name with one in another
    /// group): `%~agrp=` and the escaped group, last, for both password classes.
    func testNamesWithAGroupRoundTripAndOtherSpellingsDoNotExist() {
        let server = bytes("db.example.com")
        func grouped(_ n: ItemName, _ g: String) -> ItemName {
            var out = n
            out.group = g
            return out
        }
        let cases: [(ItemName, ItemClass, String)] = [
            (grouped(ItemName(service: bytes("db"), account: bytes("app")), "team"), .genericPassword, "app%~agrp=team"),
            (grouped(ItemName(service: bytes("db"), account: []), "a/b%"), .genericPassword, "%%~agrp=a%2Fb%25"),
            (grouped(ItemName(service: bytes("db"), account: bytes("..")), "t"), .genericPassword, "%2E.%~agrp=t"),
            (grouped(ItemName(server: server, account: bytes("alice"), qualifiers: ["port": .number(8443)]), "ops"),
             .internetPassword, "alice%~port=8443%~agrp=ops"),
            (grouped(ItemName(server: server, account: bytes("alice")), "ops"), .internetPassword, "alice%~agrp=ops"),
        ]
        for (name, c, file) in cases {
            XCTAssertEqual(String(decoding: FileNames.fileName(of: name), as: UTF8.self), file)
            let service = c == .genericPassword ? bytes("db") : server
            let back = FileNames.itemName(bytes(file), service: service, itemClass: c)
            XCTAssertEqual(back, name, file)
            XCTAssertEqual(back?.plain, name.plain, file)
            XCTAssertNil(back?.plain.group)
        }
        // The group goes last, is not empty, and a generic password has no other qualifier.
        for (bad, c) in [("app%~agrp=", ItemClass.genericPassword), ("app%~agrp=t%~port=1", .internetPassword),
                         ("app%~port=1%~agrp=t", .genericPassword), ("app%~agrp=t%~agrp=u", .genericPassword),
                         ("app%~agrp=%74", .genericPassword)] {
            XCTAssertNil(FileNames.itemName(bytes(bad), service: bytes("db"), itemClass: c), bad)
        }
        XCTAssertEqual(ItemName(service: bytes("db"), account: bytes("a")).narrowing(["x", "y"]), ["x", "y"])
        XCTAssertEqual(grouped(ItemName(service: bytes("db"), account: bytes("a")), "y").narrowing(["x", "y"]), ["y"])
    }

    /// A name that carries its synchronizable value (an item sharing its name with one of the
    /// other value in its group): `%~sync=0` or `%~sync=1`, after the group, if any.
    func testNamesWithASynchronizableValueRoundTrip() {
        func named(_ n: ItemName, _ g: String?, _ sync: Bool) -> ItemName {
            var out = n
            out.group = g
            out.synchronizable = sync
            return out
        }
        let server = bytes("db.example.com")
        let cases: [(ItemName, ItemClass, String)] = [
            (named(ItemName(service: bytes("db"), account: bytes("app")), "team", true), .genericPassword, "app%~agrp=team%~sync=1"),
            (named(ItemName(service: bytes("db"), account: bytes("app")), nil, false), .genericPassword, "app%~sync=0"),
            (named(ItemName(server: server, account: bytes("alice"), qualifiers: ["port": .number(22)]), "ops", true),
             .internetPassword, "alice%~port=22%~agrp=ops%~sync=1"),
        ]
        for (name, c, file) in cases {
            XCTAssertEqual(String(decoding: FileNames.fileName(of: name), as: UTF8.self), file)
            let back = FileNames.itemName(bytes(file), service: c == .genericPassword ? bytes("db") : server, itemClass: c)
            XCTAssertEqual(back, name, file)
            XCTAssertNil(back?.plain.synchronizable)
            XCTAssertEqual(back?.attributes[.synchronizable], .number(name.synchronizable == true ? 1 : 0))
        }
        // The value goes last, is 0 or 1, and comes once.
        for bad in ["app%~sync=1%~agrp=t", "app%~sync=2", "app%~sync=", "app%~sync=01", "app%~sync=1%~sync=1"] {
            XCTAssertNil(FileNames.itemName(bytes(bad), service: bytes("db"), itemClass: .genericPassword), bad)
        }
        let synced = named(ItemName(service: bytes("db"), account: bytes("a")), nil, true)
        XCTAssertTrue(synced.admits([.synchronizable: .number(1)]))
        XCTAssertFalse(synced.admits([:]))
        XCTAssertTrue(synced.plain.admits([:]))
    }

    func testEntriesOfOneServerAndAccountHaveDistinctNames() throws {
        try addInternet("db.example.com", "alice", "plain")
        try addInternet("db.example.com", "alice", "tls", ["port": "8443", "ptcl": "htps"])
        try addInternet("db.example.com", "bob", "b")
        try vault.addPassword(service: "db.example.com", account: "alice", secret: "generic")
        let listed = try vault.fileEntries(itemClass: .internetPassword, service: bytes("db.example.com"), accessGroups: groups)
        XCTAssertEqual(listed.map { String(decoding: FileNames.fileName(of: $0.name), as: UTF8.self) },
                       ["alice", "alice%~ptcl=htps%~port=8443", "bob"])
        XCTAssertEqual(listed.map(\.itemClass), [.internetPassword, .internetPassword, .internetPassword])
        XCTAssertEqual(listed.map(\.service), [bytes("db.example.com")] + [bytes("db.example.com")] + [bytes("db.example.com")])
        for e in listed {
            let found = try vault.fileEntries(named: e.name, accessGroups: groups)
            XCTAssertEqual(found.map(\.ref), [e.ref], "each name finds exactly its item")
        }
        let plain = try XCTUnwrap(listed.first)
        XCTAssertEqual(try vault.fileSecret(of: plain, accessGroups: groups).string, "plain")
        XCTAssertEqual(try vault.fileSecret(of: listed[1].ref, accessGroups: groups).string, "tls")
        // Generic passwords keep their own listing.
        XCTAssertEqual(try vault.fileEntries(service: bytes("db.example.com"), accessGroups: groups).map(\.itemClass), [.genericPassword])
        vault.lock()
        XCTAssertEqual(try vault.fileEntries(itemClass: .internetPassword, accessGroups: groups).count, 0, "locked items vanish")
    }

    func testStoreCreateRenameAndDeleteAnInternetFile() throws {
        try addInternet("git.example.com", "ci", "old", ["port": "2222", "labl": "kept"])
        let name = ItemName(server: bytes("git.example.com"), account: bytes("ci"), qualifiers: ["port": .number(2222)])
        let e = try XCTUnwrap(vault.fileEntries(named: name, accessGroups: groups).first)
        _ = try vault.storeFileSecret(secret("new"), in: e.ref, accessGroups: groups)
        XCTAssertEqual(try internetSecret(["srvr": "git.example.com", "port": 2222]), "new")
        // By name: into the existing item, else a new one with exactly that primary key.
        let same = try vault.storeFileSecret(secret("newer"), named: name, accessGroups: groups)
        XCTAssertFalse(same.created)
        XCTAssertEqual(same.entry.ref, e.ref)
        let other = ItemName(server: bytes("git.example.com"), account: bytes("ci"), qualifiers: ["ptcl": "ssh "])
        let made = try vault.createFile(other, secret: secret("ssh"), accessGroups: groups)
        XCTAssertTrue(made.created)
        XCTAssertEqual(made.entry.name, other)
        XCTAssertEqual(try internetSecret(["srvr": "git.example.com", "ptcl": "ssh "]), "ssh")
        XCTAssertEqual(try internetSecret(["srvr": "git.example.com", "port": 2222]), "newer")
        // A rename gives the whole new name: the port goes, the account changes.
        let plain = ItemName(server: bytes("git.example.com"), account: bytes("deploy"))
        let moved = try vault.renameFile(e.ref, to: plain, replacing: false, accessGroups: groups)
        XCTAssertEqual(moved.entry.name, plain)
        XCTAssertEqual(moved.entry.attributes["labl"], "kept")
        XCTAssertEqual(try vault.fileEntries(named: plain, accessGroups: groups).map(\.ref), [e.ref])
        XCTAssertEqual(try vault.fileEntries(named: name, accessGroups: groups).count, 0)
        XCTAssertStatus(.duplicateItem, try vault.renameFile(made.entry.ref, to: plain, replacing: false, accessGroups: groups))
        XCTAssertStatus(.param, try vault.renameFile(made.entry.ref, to: ItemName(service: bytes("s"), account: bytes("a")),
                                                     replacing: false, accessGroups: groups))
        // Delete takes exactly the named item.
        XCTAssertEqual(try vault.deleteFile(plain, accessGroups: groups), ["app.default"])
        XCTAssertEqual(try vault.fileEntries(itemClass: .internetPassword, accessGroups: groups).map(\.name), [other])
        XCTAssertStatus(.itemNotFound, try vault.deleteFile(plain, accessGroups: groups))
    }
}

/// The hashed-name form (`%H` and 32 hex digits), as the mount recognises it.
enum LongHashed {
    static func isHashed(_ name: [UInt8]) -> Bool {
        name.count == 34 && name.starts(with: Array("%H".utf8))
    }
}
