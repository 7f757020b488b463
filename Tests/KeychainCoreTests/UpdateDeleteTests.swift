import KeychainCore
import KeychainCrypto
import XCTest

/// PRODUCT 3: SecItemUpdate and SecItemDelete rules.
final class UpdateDeleteTests: XCTestCase {
    var scratch: Scratch!

    // XCTest keeps every test case alive to the end of the run: the scratch directory goes now.
    override func tearDown() { scratch = nil }
    var vault: Vault!

    override func setUpWithError() throws {
        scratch = try Scratch()
        vault = try scratch.makeVault()
        try vault.addPassword(service: "s", account: "a", secret: "A", ["labl": "first"])
        try vault.addPassword(service: "s", account: "b", secret: "B", ["labl": "second"])
        try vault.addPassword(service: "t", account: "a", secret: "C")
    }

    func testReturnOrMatchKeysInUpdateQueryAreParam() throws {
        XCTAssertStatus(.param, try vault.update(["class": "genp", "r_Data": true], changes: ["labl": "x"], accessGroups: groups))
        XCTAssertStatus(.param, try vault.update(["class": "genp", "m_Limit": "m_LimitAll"], changes: ["labl": "x"],
                                                 accessGroups: groups))
    }

    func testUnchangeableAttributeIsNoSuchAttr() throws {
        XCTAssertStatus(.noSuchAttr, try vault.update(["class": "genp"], changes: ["class": "inet"], accessGroups: groups))
        XCTAssertStatus(.noSuchAttr, try vault.update(["class": "genp"], changes: ["srvr": "x"], accessGroups: groups))
        XCTAssertStatus(.noSuchAttr, try vault.update(["class": "genp"], changes: ["cdat": .date(1)], accessGroups: groups))
    }

    func testUpdateChangesEveryMatch() throws {
        try vault.update(["class": "genp", "svce": "s"], changes: ["icmt": "bulk"], accessGroups: groups)
        let r = try vault.copyMatching(["class": "genp", "icmt": "bulk", "m_Limit": "m_LimitAll", "r_Attributes": true],
                                       accessGroups: groups)
        XCTAssertEqual(r.array?.compactMap { $0.item?.attributes["acct"]?.stringValue }, ["a", "b"])
    }

    /// As Apple's SecItemUpdate: a query without `agrp` changes the matches in every group given,
    /// each staying in its group; one with `agrp` only that group's.
    func testUpdateWithoutAGroupChangesTheMatchesOfEveryGroup() throws {
        try vault.addPassword(service: "s", account: "a", secret: "shared", groups: ["app.shared"])
        try vault.update(["class": "genp", "svce": "s", "acct": "a"], changes: ["v_Data": "both"], accessGroups: groups)
        XCTAssertEqual(try vault.password(service: "s", account: "a", groups: ["app.default"]), "both")
        XCTAssertEqual(try vault.password(service: "s", account: "a", groups: ["app.shared"]), "both")
        try vault.update(["class": "genp", "svce": "s", "acct": "a", "agrp": "app.shared"], changes: ["v_Data": "one"],
                         accessGroups: groups)
        XCTAssertEqual(try vault.password(service: "s", account: "a", groups: ["app.default"]), "both")
        XCTAssertEqual(try vault.password(service: "s", account: "a", groups: ["app.shared"]), "one")
        // Only the groups given: the caller of app.default alone changes nothing of app.shared.
        try vault.update(["class": "genp", "svce": "s", "acct": "a"], changes: ["v_Data": "mine"], accessGroups: ["app.default"])
        XCTAssertEqual(try vault.password(service: "s", account: "a", groups: ["app.shared"]), "one")
    }

    func testUpdateSecretAndKeepInsertionOrderAndBumpModificationDate() throws {
        let before = try vault.copyMatching(["class": "genp", "svce": "s", "acct": "a", "r_Attributes": true],
                                            accessGroups: groups).value?.item?.attributes
        try vault.update(["class": "genp", "svce": "s", "acct": "a"], changes: ["v_Data": "A2"], accessGroups: groups)
        XCTAssertEqual(try vault.password(service: "s", account: "a"), "A2")
        let after = try vault.copyMatching(["class": "genp", "svce": "s", "acct": "a", "r_Attributes": true],
                                           accessGroups: groups).value?.item?.attributes
        XCTAssertEqual(after?["cdat"], before?["cdat"])
        guard case .date(let m0)? = before?["mdat"], case .date(let m1)? = after?["mdat"] else { return XCTFail() }
        XCTAssertGreaterThanOrEqual(m1, m0)
        XCTAssertEqual(after?["labl"], "first", "untouched attributes stay")
        let order = try vault.copyMatching(["class": "genp", "m_Limit": "m_LimitAll", "r_Attributes": true], accessGroups: groups)
        XCTAssertEqual(order.array?.compactMap { $0.item?.attributes["svce"]?.stringValue }, ["s", "s", "t"])
    }

    /// PRODUCT 2: an access control carries the protection. A new kSecAttrAccessible moves the
    /// item's access control to that class with its flags, and seals the item under it.
    func testNewProtectionCarriesTheAccessControlWithIt() throws {
        let flags = AccessControl.privateKeyUsage  // a flag that gates nothing: the secret stays readable
        try vault.add(["class": "genp", "svce": "ac", "acct": "a", "accc": AccessControl(protection: .alwaysThisDeviceOnly, flags: flags).value],
                      secret: secret("X"), accessGroups: groups)
        let q: Attributes = ["class": "genp", "svce": "ac", "acct": "a"]
        func attributes() throws -> Attributes? {
            try vault.copyMatching(q.merging(["r_Attributes": true]) { $1 }, accessGroups: groups).value?.item?.attributes
        }
        XCTAssertEqual(try attributes()?["pdmn"], "dku")
        try vault.update(q, changes: ["pdmn": "ak"], accessGroups: groups)
        XCTAssertEqual(try attributes()?["pdmn"], "ak")
        XCTAssertEqual(try attributes()?["accc"], AccessControl(protection: .whenUnlocked, flags: flags).value)
        XCTAssertEqual(try vault.password(service: "ac", account: "a"), "X")
        // Now sealed under WhenUnlocked: a lock takes it away, as it would not a dku item.
        vault.lock()
        XCTAssertStatus(.interactionNotAllowed, try vault.password(service: "ac", account: "a"))
        try vault.unlock(passphrase: secret("correct horse"))
        // A new access control alone brings its protection; beside a different one it is param.
        try vault.update(q, changes: ["accc": AccessControl(protection: .afterFirstUnlock, flags: 0).value], accessGroups: groups)
        XCTAssertEqual(try attributes()?["pdmn"], "ck")
        XCTAssertStatus(.param, try vault.update(q, changes: ["pdmn": "ak", "accc": AccessControl(protection: .afterFirstUnlock, flags: 0).value],
                                                 accessGroups: groups))
        XCTAssertEqual(try attributes()?["accc"], AccessControl(protection: .afterFirstUnlock, flags: 0).value, "nothing changed")
        // An item without an access control gets none.
        try vault.update(["class": "genp", "svce": "t", "acct": "a"], changes: ["pdmn": "ck"], accessGroups: groups)
        let plain = try vault.copyMatching(["class": "genp", "svce": "t", "r_Attributes": true], accessGroups: groups).value?.item?.attributes
        XCTAssertEqual(plain?["pdmn"], "ck")
        XCTAssertNil(plain?["accc"])
    }

    func testEmptyChangesAreParam() throws {
        XCTAssertStatus(.param, try vault.update(["class": "genp", "svce": "s"], changes: [:], accessGroups: groups))
    }

    func testNoMatchIsItemNotFound() throws {
        XCTAssertStatus(.itemNotFound, try vault.update(["class": "genp", "svce": "none"], changes: ["labl": "x"],
                                                        accessGroups: groups))
    }

    func testCollisionIsDuplicateAndChangesNothing() throws {
        XCTAssertStatus(.duplicateItem, try vault.update(["class": "genp", "svce": "s", "acct": "b"],
                                                         changes: ["acct": "a", "labl": "moved"], accessGroups: groups))
        XCTAssertEqual(try vault.password(service: "s", account: "b"), "B")
        // Two matches that would collide with each other: all or nothing.
        XCTAssertStatus(.duplicateItem, try vault.update(["class": "genp", "svce": "s"], changes: ["acct": "same"],
                                                         accessGroups: groups))
        XCTAssertEqual(try vault.password(service: "s", account: "a"), "A")
        XCTAssertEqual(try vault.password(service: "s", account: "b"), "B")
    }

    func testMovingToGroupTheCallerLacksIsMissingEntitlement() throws {
        XCTAssertStatus(.missingEntitlement, try vault.update(["class": "genp", "svce": "t"], changes: ["agrp": "other"],
                                                              accessGroups: groups))
        try vault.update(["class": "genp", "svce": "t"], changes: ["agrp": "app.shared"], accessGroups: groups)
        XCTAssertEqual(try vault.password(service: "t", account: "a", groups: ["app.shared"]), "C")
        XCTAssertStatus(.itemNotFound, try vault.password(service: "t", account: "a", groups: ["app.default"]))
    }

    func testChangingProtectionClassReseals() throws {
        try vault.update(["class": "genp", "svce": "t"], changes: ["pdmn": "ck"], accessGroups: groups)
        vault.lock()
        XCTAssertEqual(try vault.password(service: "t", account: "a"), "C")
        XCTAssertStatus(.interactionNotAllowed, try vault.password(service: "s", account: "a"))
    }

    func testDeleteRemovesEveryMatchAndAcceptsLimit() throws {
        try vault.delete(["class": "genp", "svce": "s", "m_Limit": "m_LimitOne"], accessGroups: groups)
        XCTAssertStatus(.itemNotFound, try vault.password(service: "s", account: "a"))
        XCTAssertStatus(.itemNotFound, try vault.password(service: "s", account: "b"))
        XCTAssertEqual(try vault.password(service: "t", account: "a"), "C")
        XCTAssertStatus(.itemNotFound, try vault.delete(["class": "genp", "svce": "s"], accessGroups: groups))
        XCTAssertStatus(.param, try vault.delete(["class": "genp", "r_Data": true], accessGroups: groups))
        // The primary key is free again.
        try vault.addPassword(service: "s", account: "a", secret: "again")
        XCTAssertEqual(try vault.password(service: "s", account: "a"), "again")
    }

    func testDeleteOnlyInCallersGroups() throws {
        XCTAssertStatus(.itemNotFound, try vault.delete(["class": "genp"], accessGroups: ["app.shared"]))
        XCTAssertEqual(try vault.password(service: "t", account: "a"), "C")
    }
}
