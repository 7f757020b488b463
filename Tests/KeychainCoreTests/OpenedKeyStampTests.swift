import KeychainCore
import KeychainCrypto
import XCTest

/// `Vault.checkOpened`: the stamp `privateKey` gives holds while no item row is written and the
/// vault is not locked, and answers for each caller as `privateKey` would (groups, lock, presence).
final class OpenedKeyStampTests: XCTestCase {
    var scratch: Scratch!
    var vault: Vault!

    override func setUpWithError() throws {
        scratch = try Scratch()
        vault = try scratch.makeVault()
    }

    override func tearDown() { scratch = nil }

    /// Adds a private key item with `extra`; returns its reference.
    func addKey(_ extra: Attributes = [:]) throws -> PersistentRef {
        var query: Attributes = ["class": "keys", "kcls": 1, "type": 73, "r_PersistentRef": true]
        for (k, v) in extra { query[k] = v }
        let added = try vault.add(query, secret: try SecureBytes(copying: [4, 1, 2]), accessGroups: groups)
        guard case .persistentRef(let bytes)? = added.value, let ref = PersistentRef(bytes: bytes) else {
            throw KeychainStatus.decode
        }
        return ref
    }

    func testAStampHoldsUntilAnyItemIsWritten() throws {
        let ref = try addKey()
        let stamp = try vault.privateKey(ref, accessGroups: groups).stamp
        XCTAssertTrue(stamp.openedUnlocked)
        XCTAssertTrue(try vault.checkOpened(stamp, accessGroups: groups))
        XCTAssertTrue(try vault.checkOpened(stamp, accessGroups: groups), "a check changes nothing")
        try vault.addPassword(service: "other", account: "item", secret: "x")
        XCTAssertFalse(try vault.checkOpened(stamp, accessGroups: groups), "another item's add")
        let again = try vault.privateKey(ref, accessGroups: groups).stamp
        _ = try vault.update(["v_PersistentRef": .data(ref.bytes)], changes: ["labl": "renamed"], accessGroups: groups)
        XCTAssertFalse(try vault.checkOpened(again, accessGroups: groups), "its own update")
        let last = try vault.privateKey(ref, accessGroups: groups).stamp
        _ = try vault.delete(["v_PersistentRef": .data(ref.bytes)], accessGroups: groups)
        XCTAssertFalse(try vault.checkOpened(last, accessGroups: groups), "its delete")
    }

    func testALockEndsEveryStamp() throws {
        let ref = try addKey()
        let stamp = try vault.privateKey(ref, accessGroups: groups).stamp
        vault.lock()
        XCTAssertFalse(try vault.checkOpened(stamp, accessGroups: groups))
        try vault.unlock(passphrase: secret("correct horse"))
        XCTAssertFalse(try vault.checkOpened(stamp, accessGroups: groups), "not even after the next unlock")
    }

    func testEachCallerIsCheckedAsPrivateKeyChecksIt() throws {
        let ref = try addKey()
        let stamp = try vault.privateKey(ref, accessGroups: groups).stamp
        XCTAssertStatus(.itemNotFound, try vault.checkOpened(stamp, accessGroups: ["other"]))
        XCTAssertStatus(.itemNotFound, try vault.privateKey(ref, accessGroups: ["other"]))
        XCTAssertStatus(.itemNotFound, try vault.checkOpened(stamp, accessGroups: []))
        XCTAssertTrue(try vault.checkOpened(stamp, accessGroups: ["app.shared", "app.default"]), "the key's group in any place")
    }

    func testAPresenceGatedKeyNeedsItsApprovalEachTime() throws {
        let control = AccessControl(protection: .whenUnlocked, flags: AccessControl.userPresence)
        let ref = try addKey(["accc": control.value])
        XCTAssertStatus(.interactionNotAllowed, try vault.privateKey(ref, accessGroups: groups))
        let stamp = try vault.privateKey(ref, accessGroups: groups, approved: [ref]).stamp
        XCTAssertStatus(.interactionNotAllowed, try vault.checkOpened(stamp, accessGroups: groups))
        XCTAssertTrue(try vault.checkOpened(stamp, accessGroups: groups, approved: [ref]))
    }

    func testAKeyOpenedWhileLockedSaysSo() throws {
        let ref = try addKey(["pdmn": "dk"])
        vault.lock()
        let stamp = try vault.privateKey(ref, accessGroups: groups).stamp
        XCTAssertFalse(stamp.openedUnlocked, "an Always-class key opens while locked, and is not to be kept")
    }
}
