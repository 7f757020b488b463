import Foundation
import KeychainCore
import KeychainCrypto
import XCTest

/// The frozen format-1 vault under Fixtures/vault-v1 must keep opening and reading, so a later
/// format change cannot silently break old vaults. Regenerate only for a new format version:
/// `KEYCHAINFS_WRITE_FIXTURE=DIR swift test --filter FixtureTests/testWriteFixture`.
final class FixtureTests: XCTestCase {
    static let passphrase = "keychainfs fixture v1"

    /// The items the fixture holds: account -> (protection, secret).
    static let genericItems: [(String, String, String)] = [
        ("when-unlocked", "ak", "fixture secret ak"),
        ("after-first-unlock", "ck", "fixture secret ck"),
        ("always", "dk", "fixture secret dk"),
        ("when-unlocked-tdo", "aku", "fixture secret aku"),
        ("after-first-unlock-tdo", "cku", "fixture secret cku"),
        ("always-tdo", "dku", "fixture secret dku"),
        ("passcode", "akpu", "fixture secret akpu"),
    ]

    func testWriteFixture() throws {
        guard let dir = ProcessInfo.processInfo.environment["KEYCHAINFS_WRITE_FIXTURE"] else {
            throw XCTSkip("writes a new fixture only when KEYCHAINFS_WRITE_FIXTURE names a directory")
        }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let device = try DeviceKey.loadOrCreate(at: dir + "/device.key")
        let vault = try Vault.create(at: dir + "/fixture.vault", passphrase: secret(Self.passphrase), kdf: .minimum,
                                     deviceKey: device)
        for (account, pdmn, value) in Self.genericItems {
            try vault.add(["class": "genp", "svce": "fixture", "acct": .string(account), "pdmn": .string(pdmn),
                           "labl": .string("label \(account)"), "agrp": "fixture.group"],
                          secret: secret(value), accessGroups: ["fixture.group"])
        }
        try vault.add(["class": "inet", "srvr": "db.example", "acct": "admin", "ptcl": "htps", "port": 5432,
                       "path": "/x", "pdmn": "ck"], secret: secret("fixture inet"), accessGroups: ["fixture.group"])
        try vault.add(["class": "genp", "svce": "fixture", "acct": "synced", "sync": true, "pdmn": "ck"],
                      secret: secret("fixture synced"), accessGroups: ["fixture.group"])
    }

    func fixtureCopy() throws -> (Scratch, String, DeviceKey) {
        let scratch = try Scratch()
        let source = try XCTUnwrap(Bundle.module.path(forResource: "vault-v1", ofType: nil, inDirectory: "Fixtures"))
        let path = scratch.path("fixture.vault")
        try FileManager.default.copyItem(atPath: source + "/fixture.vault", toPath: path)
        try FileManager.default.copyItem(atPath: source + "/device.key", toPath: scratch.dir + "/fixture-device.key")
        return (scratch, path, try DeviceKey.loadOrCreate(at: scratch.dir + "/fixture-device.key"))
    }

    func testFixtureOpensAndReadsEveryItem() throws {
        let (scratch, path, device) = try fixtureCopy()
        _ = scratch
        let vault = try Vault.open(at: path, deviceKey: device)
        XCTAssertEqual(vault.formatVersion, 1)
        XCTAssertEqual(vault.kdfParameters, .minimum)
        XCTAssertTrue(vault.hasPassphrase)
        let g = ["fixture.group"]
        // Before unlocking, only the Always classes read.
        XCTAssertEqual(try vault.password(service: "fixture", account: "always", groups: g), "fixture secret dk")
        XCTAssertStatus(.interactionNotAllowed, try vault.password(service: "fixture", account: "when-unlocked", groups: g))
        XCTAssertStatus(.authFailed, try vault.unlock(passphrase: secret("wrong")))
        try vault.unlock(passphrase: secret(Self.passphrase))
        for (account, pdmn, value) in Self.genericItems {
            let r = try vault.copyMatching(["class": "genp", "svce": "fixture", "acct": .string(account),
                                            "r_Attributes": true, "r_Data": true], accessGroups: g)
            let item = try XCTUnwrap(r.value?.item)
            XCTAssertEqual(item.secret?.string, value)
            XCTAssertEqual(item.attributes["pdmn"], .string(pdmn))
            XCTAssertEqual(item.attributes["labl"], .string("label \(account)"))
            XCTAssertEqual(item.attributes["agrp"], "fixture.group")
        }
        let inet = try vault.copyMatching(["class": "inet", "srvr": "db.example", "port": "5432", "r_Attributes": true,
                                           "r_Data": true], accessGroups: g)
        XCTAssertEqual(inet.value?.item?.secret?.string, "fixture inet")
        XCTAssertEqual(inet.value?.item?.attributes["ptcl"], "htps")
        XCTAssertEqual(try vault.copyMatching(["class": "genp", "acct": "synced", "sync": "syna", "r_Data": true],
                                              accessGroups: g).value?.data?.string, "fixture synced")
        let all = try vault.copyMatching(["class": "genp", "sync": "syna", "m_Limit": "m_LimitAll", "r_Attributes": true],
                                         accessGroups: g)
        XCTAssertEqual(all.array?.compactMap { $0.item?.attributes["acct"]?.stringValue },
                       Self.genericItems.map(\.0) + ["synced"], "insertion order survives")
        // The fixture is still writable by this build.
        try vault.addPassword(service: "fixture", account: "new", secret: "x", groups: g)
    }
    /// A format-2 backup written by keychainfs 0.2.0, before attribute keys were typed
    /// (Fixtures/backup-v2/README.md): every exported item comes back with its attributes,
    /// named by today's key table, its secret and its group's definition.
    func testBackupFixtureImportsEveryItem() throws {
        let scratch = try Scratch()
        let source = try XCTUnwrap(Bundle.module.path(forResource: "backup-v2", ofType: nil, inDirectory: "Fixtures"))
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: source + "/fixture.kcbackup")))
        let vault = try scratch.makeVault()
        let summary = try vault.importBackup(bytes, passphrase: secret("keychainfs fixture backup"))
        XCTAssertEqual([summary.added, summary.replaced, summary.skipped], [4, 0, 0], "the ThisDeviceOnly item was never exported")
        XCTAssertEqual(summary.groups.map { $0["name"] }, ["default", "fixture.team"])
        XCTAssertEqual(summary.groups.last?["mode"], .number(0o440))
        let g = ["default", "fixture.team"]
        func item(_ query: Attributes) throws -> FoundItem {
            var q = query
            q[.synchronizable] = .synchronizableAny
            q[.returnAttributes] = true
            q[.returnData] = true
            return try XCTUnwrap(vault.copyMatching(q, accessGroups: g).value?.item)
        }
        let alice = try item([.class: .itemClass(.genericPassword), .service: "fixture", .account: "alice"])
        XCTAssertEqual(alice.secret?.string, "fixture secret genp")
        XCTAssertEqual(alice.attributes[.label], "label alice")
        XCTAssertEqual(alice.attributes[.comment], "a comment")
        XCTAssertEqual(alice.attributes[.description], "a kind")
        XCTAssertEqual(alice.attributes[.generic], "gen")
        XCTAssertEqual(alice.attributes[.creator], .number(1234))
        XCTAssertEqual(alice.attributes[.type], .number(5678))
        XCTAssertEqual(alice.attributes[.accessible], .protection(.afterFirstUnlock))
        XCTAssertEqual(alice.attributes[.accessGroup], "default")
        XCTAssertEqual(alice.attributes[.synchronizable], .number(0))
        guard case .date(let created)? = alice.attributes[.creationDate], case .date? = alice.attributes[.modificationDate] else {
            return XCTFail("dates: \(alice.attributes)")
        }
        XCTAssertGreaterThan(created, 0)

        let synced = try item([.class: .itemClass(.genericPassword), .service: "fixture", .account: "synced"])
        XCTAssertEqual(synced.secret?.string, "fixture secret synced")
        XCTAssertEqual(synced.attributes[.synchronizable], .number(1))
        XCTAssertEqual(synced.attributes[.accessible], .protection(.whenUnlocked))

        let team = try item([.class: .itemClass(.genericPassword), .service: "fixture", .account: "team"])
        XCTAssertEqual(team.secret?.string, "fixture secret team")
        XCTAssertEqual(team.attributes[.accessGroup], "fixture.team")
        XCTAssertEqual(team.attributes[.accessible], .protection(.always))

        let inet = try item([.class: .itemClass(.internetPassword), .server: "db.example", .account: "admin",
                             .protocol: "htps", .port: 5432])
        XCTAssertEqual(inet.secret?.string, "fixture secret inet")
        XCTAssertEqual(inet.attributes[.path], "/x")
        XCTAssertEqual(inet.attributes[.securityDomain], "corp")
        XCTAssertEqual(inet.attributes[.authenticationType], "dflt")
        XCTAssertEqual(inet.attributes[.label], "inet label")

        XCTAssertStatus(.itemNotFound, try vault.copyMatching([.class: .itemClass(.genericPassword), .account: "tdo"], accessGroups: g))
    }
}
