import Foundation
import KeychainCore
import KeychainCrypto
import XCTest

/// Searches by Secret Service attribute pairs (`matchSecretAttributes`) find their items through
/// blind tokens: only the matching items are decrypted, and updates, deletes and old vaults keep
/// the tokens right.
final class SecretTokenSearchTests: XCTestCase {
    var g = ["app.default"]

    func pairs(_ p: [String: String]) -> AttributeValue { .data(SecretServicePairs.encode(p, contentType: "")) }

    /// A generic password as the Secret Service stores one: its pairs in `gena`.
    func addSecretServiceItem(_ vault: Vault, account: String, attributes: [String: String]) throws {
        try vault.add([.class: .itemClass(.genericPassword), .service: "ss", .account: .string(account),
                       .generic: .data(SecretServicePairs.encode(attributes, contentType: "text/plain"))],
                      secret: secret("secret \(account)"), accessGroups: g)
    }

    func accounts(_ vault: Vault, _ p: [String: String]) throws -> [String] {
        do {
            let r = try vault.copyMatching([.class: .itemClass(.genericPassword), .matchSecretAttributes: pairs(p),
                                            .matchLimit: .matchLimitAll, .returnAttributes: true], accessGroups: g)
            return r.array?.compactMap { $0.item?.attributes[.account]?.stringValue } ?? []
        } catch KeychainStatus.itemNotFound {
            return []
        }
    }

    /// Returns what `body` found and how many items' attributes the vault decrypted for it.
    func counting<T>(_ vault: Vault, _ body: () throws -> T) rethrows -> (T, Int) {
        let before = vault.attributeOpenCount
        let r = try body()
        return (r, vault.attributeOpenCount - before)
    }

    func testSearchByPairsDecryptsOnlyTheMatchingItems() throws {
        let scratch = try Scratch()
        let vault = try scratch.makeVault()
        for i in 0..<60 {
            try addSecretServiceItem(vault, account: "a\(i)", attributes: ["app": "mail", "user": "u\(i % 6)", "n": "\(i)"])
        }
        try vault.addPassword(service: "cli-service", account: "cli-account", secret: "x", groups: g)

        let (found, opened) = try counting(vault) { try accounts(vault, ["app": "mail", "user": "u2"]) }
        XCTAssertEqual(found, (0..<60).filter { $0 % 6 == 2 }.map { "a\($0)" })
        XCTAssertEqual(opened, 10, "only the ten items holding both pairs are decrypted")
        let (one, openedOne) = try counting(vault) { try accounts(vault, ["n": "17"]) }
        XCTAssertEqual(one, ["a17"])
        XCTAssertEqual(openedOne, 1)
        let (none, openedNone) = try counting(vault) { try accounts(vault, ["app": "mail", "user": "nobody"]) }
        XCTAssertEqual(none, [])
        XCTAssertEqual(openedNone, 0)
        // An item made elsewhere has service, account and username from svce and acct.
        XCTAssertEqual(try accounts(vault, ["service": "cli-service", "username": "cli-account"]), ["cli-account"])
        XCTAssertEqual(try accounts(vault, ["service": "cli-service", "username": "other"]), [])
    }

    func testUpdateAndDeleteKeepTheTokensRight() throws {
        let scratch = try Scratch()
        let vault = try scratch.makeVault()
        try addSecretServiceItem(vault, account: "moved", attributes: ["app": "old"])
        try addSecretServiceItem(vault, account: "gone", attributes: ["app": "old"])
        try vault.update([.class: .itemClass(.genericPassword), .account: "moved"],
                         changes: [.generic: .data(SecretServicePairs.encode(["app": "new"], contentType: "text/plain"))],
                         accessGroups: g)
        try vault.delete([.class: .itemClass(.genericPassword), .account: "gone"], accessGroups: g)
        let (old, openedOld) = try counting(vault) { try accounts(vault, ["app": "old"]) }
        XCTAssertEqual(old, [])
        XCTAssertEqual(openedOld, 0, "the changed and the deleted item no longer hold the old pair's token")
        XCTAssertEqual(try accounts(vault, ["app": "new"]), ["moved"])
        XCTAssertEqual(try vault.verify().damaged, [])
    }

    /// A format-1 vault (Fixtures/vault-v1, no pair tokens) is searched by opening every
    /// candidate until it is unlocked; its first search then adds the tokens once, and verify
    /// agrees with them.
    func testAnOldVaultGetsItsTokensAtItsFirstUnlockedSearch() throws {
        let scratch = try Scratch()
        let source = try XCTUnwrap(Bundle.module.path(forResource: "vault-v1", ofType: nil, inDirectory: "Fixtures"))
        let path = scratch.path("fixture.vault")
        try FileManager.default.copyItem(atPath: source + "/fixture.vault", toPath: path)
        try FileManager.default.copyItem(atPath: source + "/device.key", toPath: scratch.dir + "/fixture-device.key")
        let device = try DeviceKey.loadOrCreate(at: scratch.dir + "/fixture-device.key")
        g = ["fixture.group"]
        let vault = try Vault.open(at: path, deviceKey: device)
        let wanted = ["service": "fixture", "account": "always"]
        XCTAssertEqual(try accounts(vault, wanted), ["always"], "locked: the readable items are scanned")
        try vault.unlock(passphrase: secret(FixtureTests.passphrase))
        XCTAssertEqual(try accounts(vault, wanted), ["always"])
        let (again, opened) = try counting(vault) { try accounts(vault, wanted) }
        XCTAssertEqual(again, ["always"])
        XCTAssertEqual(opened, 1, "the tokens were added at the first unlocked search")
        XCTAssertEqual(try vault.verify().damaged, [])
        // They are kept on disk: the vault opened again needs no rebuild.
        let reopened = try Vault.open(at: path, deviceKey: device)
        try reopened.unlock(passphrase: secret(FixtureTests.passphrase))
        let (third, openedThird) = try counting(reopened) { try accounts(reopened, wanted) }
        XCTAssertEqual(third, ["always"])
        XCTAssertEqual(openedThird, 1)
    }
}
