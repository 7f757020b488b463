@testable import KeychainCore
import Foundation
import KeychainCrypto
import SQLiteStore
import XCTest

/// A lookup keeps the item key it unwrapped (`Vault.openedItemKeys`), so the same item looked
/// up again skips one decryption. What a lookup answers never depends on it: a new secret, a
/// key moved to another item and a lock each behave as without it.
final class OpenedItemKeyTests: XCTestCase {
    var scratch: Scratch!
    override func setUpWithError() throws { scratch = try Scratch() }
    override func tearDown() { scratch = nil }

    private func secretOf(_ vault: Vault, _ account: String) throws -> String {
        let q: Attributes = ["class": "genp", "svce": "db", "acct": .string(account), "r_Data": true]
        guard let data = try vault.copyMatching(q, accessGroups: groups).value?.data else { throw KeychainStatus.decode }
        return data.string
    }

    func testLookupsKeepOneItemKeyPerItemAndANewSecretIsRead() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "one")
        try vault.addPassword(service: "db", account: "cache", secret: "123456")
        vault.openedItemKeys.withLock { $0.removeAll() }
        for _ in 0..<3 {
            XCTAssertEqual(try secretOf(vault, "app"), "one")
            XCTAssertEqual(try secretOf(vault, "cache"), "123456")
        }
        XCTAssertEqual(vault.openedItemKeys.withLock { $0.count }, 2, "one kept key per item, however often looked up")
        // A new secret is sealed under a new item key: the kept one does not match it.
        try vault.update(["class": "genp", "acct": "app"], changes: [:], secret: secret("two"), accessGroups: groups)
        XCTAssertEqual(try secretOf(vault, "app"), "two")
        XCTAssertEqual(try secretOf(vault, "app"), "two")
        vault.lock()
        XCTAssertTrue(vault.openedItemKeys.withLock { $0.isEmpty }, "every kept key is wiped at the lock")
        XCTAssertThrowsError(try secretOf(vault, "app")) { XCTAssertEqual($0 as? KeychainStatus, .interactionNotAllowed) }
    }

    func testAKeptKeyNeverOpensAnotherItemsRow() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "app secret")
        try vault.addPassword(service: "db", account: "other", secret: "other secret")
        XCTAssertEqual(try secretOf(vault, "app"), "app secret")
        XCTAssertEqual(try secretOf(vault, "other"), "other secret")
        // A tamperer copies `other`'s sealed parts onto `app`'s row: the kept key of `other`'s
        // box is bound to `other`'s identity, so `app`'s row still fails to open.
        try Connection(path: scratch.path(), create: false).execute("""
            UPDATE items SET (wrapped_key, attrs, data) = (SELECT wrapped_key, attrs, data FROM items WHERE rowid = 2)
            WHERE rowid = 1
            """)
        XCTAssertThrowsError(try secretOf(vault, "app")) { XCTAssertEqual($0 as? KeychainStatus, .decode) }
        XCTAssertEqual(try secretOf(vault, "other"), "other secret")
    }
}
