import Foundation
import KeychainCore
import KeychainCrypto
import XCTest

/// PRODUCT 2, 4 and 5: protection classes against the lock state, passphrases, device binding.
final class LockAndKeysTests: XCTestCase {
    var scratch: Scratch!

    // XCTest keeps every test case alive to the end of the run: the scratch directory goes now.
    override func tearDown() { scratch = nil }

    override func setUpWithError() throws { scratch = try Scratch() }

    /// One item per protection class, account = raw class value.
    func fill(_ vault: Vault, passcodeClass: Bool = true) throws {
        for p in ProtectionClass.allCases where passcodeClass || p != .whenPasscodeSetThisDeviceOnly {
            try vault.addPassword(service: "p", account: p.rawValue, secret: "secret-\(p.rawValue)",
                                  ["pdmn": .string(p.rawValue)])
        }
    }

    func readable(_ vault: Vault) -> [String: KeychainStatus] {
        var out: [String: KeychainStatus] = [:]
        for p in ProtectionClass.allCases {
            do {
                let s = try vault.password(service: "p", account: p.rawValue)
                out[p.rawValue] = s == "secret-\(p.rawValue)" ? .success : .decode
            } catch {
                out[p.rawValue] = (error as? KeychainStatus) ?? .io
            }
        }
        return out
    }

    func testLockWipesWhenUnlockedClassesOnly() throws {
        let vault = try scratch.makeVault()
        try fill(vault)
        XCTAssertEqual(vault.lockState, .unlocked)
        XCTAssertTrue(readable(vault).values.allSatisfy { $0 == .success })
        vault.lock()
        XCTAssertEqual(vault.lockState, .locked)
        XCTAssertEqual(readable(vault), [
            "ak": .interactionNotAllowed, "aku": .interactionNotAllowed, "akpu": .interactionNotAllowed,
            "ck": .success, "cku": .success, "dk": .success, "dku": .success,
        ])
        // Adds to a locked class are refused too; unlocked classes still take adds.
        XCTAssertStatus(.interactionNotAllowed, try vault.addPassword(service: "q", account: "a", secret: "x"))
        try vault.addPassword(service: "q", account: "c", secret: "x", ["pdmn": "ck"])
        try vault.unlock(passphrase: secret("correct horse"))
        XCTAssertTrue(readable(vault).values.allSatisfy { $0 == .success })
    }

    func testBeforeFirstUnlockOnlyAlwaysClassesRead() throws {
        try fill(try scratch.makeVault())
        let vault = try Vault.open(at: scratch.path(), deviceKey: try scratch.deviceKey())
        XCTAssertEqual(vault.lockState, .neverUnlocked)
        XCTAssertEqual(readable(vault), [
            "ak": .interactionNotAllowed, "aku": .interactionNotAllowed, "akpu": .interactionNotAllowed,
            "ck": .interactionNotAllowed, "cku": .interactionNotAllowed, "dk": .success, "dku": .success,
        ])
    }

    func testLockedSearchStillReturnsUnlockedClassesAndStatusWhenOnlyLockedMatch() throws {
        let vault = try scratch.makeVault()
        try fill(vault)
        vault.lock()
        let r = try vault.copyMatching(["class": "genp", "svce": "p", "m_Limit": "m_LimitAll", "r_Attributes": true],
                                       accessGroups: groups)
        XCTAssertEqual(Set(r.array?.compactMap { $0.item?.attributes["acct"]?.stringValue } ?? []), ["ck", "cku", "dk", "dku"])
        XCTAssertStatus(.interactionNotAllowed, try vault.copyMatching(["class": "genp", "pdmn": "ak"], accessGroups: groups))
    }

    func testWrongPassphraseIsAuthFailedAndChangesNothingOnDisk() throws {
        try fill(try scratch.makeVault())
        let before = try Data(contentsOf: URL(fileURLWithPath: scratch.path()))
        let vault = try Vault.open(at: scratch.path(), deviceKey: try scratch.deviceKey())
        XCTAssertStatus(.authFailed, try vault.unlock(passphrase: secret("wrong")))
        XCTAssertStatus(.authFailed, try vault.unlock(passphrase: secret("")))
        XCTAssertEqual(vault.lockState, .neverUnlocked)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: scratch.path())), before)
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: scratch.path() + "-wal"))) ?? Data()
        XCTAssertEqual(wal.count, 0, "nothing was written to the journal")
        try vault.unlock(passphrase: secret("correct horse"))
        XCTAssertEqual(try vault.password(service: "p", account: "ak"), "secret-ak")
    }

    func testPasscodeClassNeedsAPassphrase() throws {
        let vault = try scratch.makeVault(passphrase: nil)
        XCTAssertFalse(vault.hasPassphrase)
        XCTAssertStatus(.authFailed, try vault.addPassword(service: "p", account: "akpu", secret: "x", ["pdmn": "akpu"]))
        // Adding a passphrase makes the class usable.
        try vault.changePassphrase(from: secret(""), to: secret("now set"))
        try vault.addPassword(service: "p", account: "akpu", secret: "secret-akpu", ["pdmn": "akpu"])
        XCTAssertEqual(try vault.password(service: "p", account: "akpu"), "secret-akpu")
    }

    func testRemovingPassphraseDeletesPasscodeItems() throws {
        let vault = try scratch.makeVault()
        try fill(vault)
        let deleted = try vault.changePassphrase(from: secret("correct horse"), to: nil)
        XCTAssertEqual(deleted, 1)
        XCTAssertStatus(.itemNotFound, try vault.password(service: "p", account: "akpu"))
        XCTAssertEqual(try vault.password(service: "p", account: "aku"), "secret-aku")
        XCTAssertStatus(.authFailed, try vault.addPassword(service: "p", account: "akpu", secret: "x", ["pdmn": "akpu"]))
        // A vault without a passphrase unlocks with the empty one.
        let reopened = try Vault.open(at: scratch.path(), deviceKey: try scratch.deviceKey())
        try reopened.unlock(passphrase: secret(""))
        XCTAssertEqual(try reopened.password(service: "p", account: "ak"), "secret-ak")
    }

    func testChangePassphrase() throws {
        let vault = try scratch.makeVault()
        try fill(vault)
        XCTAssertStatus(.authFailed, try vault.changePassphrase(from: secret("nope"), to: secret("new")))
        try vault.changePassphrase(from: secret("correct horse"), to: secret("new pass"), kdf: .interactive)
        let reopened = try Vault.open(at: scratch.path(), deviceKey: try scratch.deviceKey())
        XCTAssertEqual(reopened.kdfParameters, .interactive)
        XCTAssertStatus(.authFailed, try reopened.unlock(passphrase: secret("correct horse")))
        try reopened.unlock(passphrase: secret("new pass"))
        XCTAssertTrue(readable(reopened).values.allSatisfy { $0 == .success })
    }

    /// A vault copied to another machine: migratable classes read after unlock; ThisDeviceOnly
    /// classes give errSecDecode (documented in docs/semantics.md); nothing crashes.
    func testVaultCopiedToAnotherDevice() throws {
        try fill(try scratch.makeVault())
        let copy = scratch.path("copy.vault")
        try FileManager.default.copyItem(atPath: scratch.path(), toPath: copy)
        let elsewhere = try Vault.open(at: copy, deviceKey: try scratch.deviceKey("other-machine"))
        XCTAssertFalse(elsewhere.isOnOriginalDevice)
        // Before the first unlock there the index key is out of reach: nothing can be searched.
        XCTAssertTrue(readable(elsewhere).values.allSatisfy { $0 == .interactionNotAllowed })
        try elsewhere.unlock(passphrase: secret("correct horse"))
        XCTAssertEqual(readable(elsewhere), [
            "ak": .success, "ck": .success, "dk": .success,
            "aku": .decode, "cku": .decode, "dku": .decode, "akpu": .decode,
        ])
        XCTAssertEqual(try elsewhere.info().itemsBoundToOtherDevice, 4)
        XCTAssertStatus(.decode, try elsewhere.addPassword(service: "p", account: "new", secret: "x", ["pdmn": "aku"]))
        // Back on the original machine everything still reads.
        let home = try Vault.open(at: copy, deviceKey: try scratch.deviceKey())
        try home.unlock(passphrase: secret("correct horse"))
        XCTAssertTrue(readable(home).values.allSatisfy { $0 == .success })
    }

    func testPassphraseChangeOnAnotherDeviceKeepsDeviceItemsForHome() throws {
        try fill(try scratch.makeVault())
        let elsewhere = try Vault.open(at: scratch.path(), deviceKey: try scratch.deviceKey("other-machine"))
        try elsewhere.changePassphrase(from: secret("correct horse"), to: secret("changed abroad"))
        let home = try Vault.open(at: scratch.path(), deviceKey: try scratch.deviceKey())
        try home.unlock(passphrase: secret("changed abroad"))
        XCTAssertTrue(readable(home).values.allSatisfy { $0 == .success })
    }

    func testInfoCountsWithoutDecrypting() throws {
        let vault = try scratch.makeVault()
        try fill(vault)
        vault.lock()
        let info = try vault.info()
        XCTAssertEqual(info.itemCount, 7)
        XCTAssertEqual(info.itemsByProtection[.whenUnlocked], 1)
        XCTAssertEqual(info.lockState, .locked)
        XCTAssertEqual(info.itemsBoundToOtherDevice, 0)
    }

    func testDeviceKeyFileIsCreatedOwnerReadOnly() throws {
        let path = scratch.dir + "/nested/dir/device.key"
        let a = try DeviceKey.loadOrCreate(at: path)
        let attrs = try FileManager.default.attributesOfItem(atPath: path)
        XCTAssertEqual((attrs[.posixPermissions] as? NSNumber)?.intValue, 0o400)
        XCTAssertEqual((attrs[.size] as? NSNumber)?.intValue, 32)
        _ = a
        let vaultAttrs = try FileManager.default.attributesOfItem(atPath: try scratch.makeVault().path)
        XCTAssertEqual((vaultAttrs[.posixPermissions] as? NSNumber)?.intValue, 0o600)
    }
}
