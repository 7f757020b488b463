import KeychainCore
import KeychainCrypto
import XCTest

/// PRODUCT 2: classes, primary keys, protection classes, attribute normalisation.
final class ItemRulesTests: XCTestCase {
    var scratch: Scratch!

    // XCTest keeps every test case alive to the end of the run: the scratch directory goes now.
    override func tearDown() { scratch = nil }
    var vault: Vault!

    override func setUpWithError() throws {
        scratch = try Scratch()
        vault = try scratch.makeVault()
    }

    func testDuplicatePrimaryKeyPerClass() throws {
        let items: [Attributes] = [
            ["class": "genp", "svce": "db", "acct": "app"],
            ["class": "inet", "srvr": "example.com", "acct": "bob", "ptcl": "htps", "port": 443, "path": "/"],
            ["class": "cert", "ctyp": 1, "issr": .data([1, 2]), "slnr": .data([3])],
            ["class": "keys", "kcls": 1, "klbl": .data([9]), "atag": .data([1]), "bsiz": 256],
        ]
        for item in items {
            try vault.add(item, secret: secret("one"), accessGroups: groups)
            XCTAssertStatus(.duplicateItem, try vault.add(item, secret: secret("two"), accessGroups: groups))
            // A non-key attribute does not make it a different item.
            var labelled = item
            labelled["labl"] = "other label"
            XCTAssertStatus(.duplicateItem, try vault.add(labelled, accessGroups: groups))
        }
    }

    func testPrimaryKeyAttributesDistinguishItems() throws {
        try vault.addPassword(service: "db", account: "app", secret: "a")
        try vault.addPassword(service: "db", account: "app2", secret: "b")
        try vault.addPassword(service: "db2", account: "app", secret: "c")
        try vault.addPassword(service: "db", account: "app", secret: "d", ["agrp": "app.shared"])
        try vault.addPassword(service: "db", account: "app", secret: "e", ["sync": true])
        // The protection class is not part of the key.
        XCTAssertStatus(.duplicateItem, try vault.addPassword(service: "db", account: "app", secret: "f", ["pdmn": "ck"]))
        XCTAssertEqual(try vault.password(service: "db", account: "app", groups: ["app.default"]), "a")
        XCTAssertEqual(try vault.password(service: "db", account: "app", groups: ["app.shared"]), "d")
    }

    func testMissingKeyAttributesCountAsEmpty() throws {
        try vault.add(["class": "genp", "svce": "only-service"], secret: secret("x"), accessGroups: groups)
        XCTAssertStatus(.duplicateItem, try vault.add(["class": "genp", "svce": "only-service", "acct": ""],
                                                      accessGroups: groups))
        XCTAssertEqual(try vault.password(service: "only-service", account: ""), "x")
        // Internet password: a missing port is port 0.
        try vault.add(["class": "inet", "srvr": "h"], accessGroups: groups)
        XCTAssertStatus(.duplicateItem, try vault.add(["class": "inet", "srvr": "h", "port": 0], accessGroups: groups))
        try vault.add(["class": "inet", "srvr": "h", "port": 8080], accessGroups: groups)
    }

    func testDefaultProtectionIsWhenUnlocked() throws {
        try vault.addPassword(service: "s", account: "a", secret: "x")
        let r = try vault.copyMatching(["class": "genp", "svce": "s", "r_Attributes": true], accessGroups: groups)
        XCTAssertEqual(r.value?.item?.attributes["pdmn"], "ak")
        XCTAssertEqual(r.value?.item?.attributes["agrp"], "app.default")
        XCTAssertEqual(r.value?.item?.attributes["sync"], .number(0))
        XCTAssertEqual(r.value?.item?.attributes["class"], "genp")
    }

    func testInvalidProtectionAndSyncWithThisDeviceOnly() throws {
        XCTAssertStatus(.param, try vault.addPassword(service: "s", account: "a", secret: "x", ["pdmn": "zz"]))
        for p in ["aku", "cku", "dku", "akpu"] {
            XCTAssertStatus(.param, try vault.addPassword(service: "s", account: p, secret: "x",
                                                          ["pdmn": .string(p), "sync": true]))
        }
        try vault.addPassword(service: "s", account: "ok", secret: "x", ["pdmn": "ck", "sync": true])
    }

    func testUnknownClassAndMissingClass() throws {
        XCTAssertStatus(.noSuchClass, try vault.add(["class": "nope", "svce": "s"], accessGroups: groups))
        XCTAssertStatus(.param, try vault.add(["svce": "s"], accessGroups: groups))
        XCTAssertStatus(.noSuchClass, try vault.copyMatching(["class": "nope"], accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(["svce": "s"], accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(["class": 5], accessGroups: groups))
    }

    func testAttributeOfAnotherClassIsNoSuchAttr() throws {
        XCTAssertStatus(.noSuchAttr, try vault.add(["class": "genp", "srvr": "x"], accessGroups: groups))
        XCTAssertStatus(.noSuchAttr, try vault.copyMatching(["class": "genp", "srvr": "x"], accessGroups: groups))
        XCTAssertStatus(.noSuchAttr, try vault.add(["class": "genp", "bogus": "x"], accessGroups: groups))
    }

    func testNumericStringsBecomeNumbersOtherStringsStay() throws {
        try vault.add(["class": "inet", "srvr": "h", "port": "8443", "ptcl": "htps", "type": "1234", "crtr": "abcd"],
                      accessGroups: groups)
        let r = try vault.copyMatching(["class": "inet", "srvr": "h", "r_Attributes": true], accessGroups: groups)
        let a = try XCTUnwrap(r.value?.item?.attributes)
        XCTAssertEqual(a["port"], .number(8443))
        XCTAssertEqual(a["type"], .number(1234))
        XCTAssertEqual(a["ptcl"], .string("htps"))
        XCTAssertEqual(a["crtr"], .string("abcd"))
        // The number and the numeric string find the same item.
        XCTAssertNoThrow(try vault.copyMatching(["class": "inet", "port": 8443], accessGroups: groups))
        XCTAssertStatus(.duplicateItem, try vault.add(["class": "inet", "srvr": "h", "port": 8443, "ptcl": "htps"],
                                                      accessGroups: groups))
    }

    func testBooleansStoredAsZeroOne() throws {
        try vault.addPassword(service: "s", account: "a", secret: "x", ["invi": true, "nega": false])
        let a = try XCTUnwrap(vault.copyMatching(["class": "genp", "r_Attributes": true], accessGroups: groups).value?.item?.attributes)
        XCTAssertEqual(a["invi"], .number(1))
        XCTAssertEqual(a["nega"], .number(0))
        XCTAssertNoThrow(try vault.copyMatching(["class": "genp", "invi": 1], accessGroups: groups))
    }

    func testStringAndDataKeptAsGiven() throws {
        try vault.add(["class": "genp", "svce": "s", "acct": .data(Array("bin".utf8)), "labl": "L", "gena": .data([0, 1])],
                      accessGroups: groups)
        let a = try XCTUnwrap(vault.copyMatching(["class": "genp", "svce": "s", "r_Attributes": true],
                                                 accessGroups: groups).value?.item?.attributes)
        XCTAssertEqual(a["acct"], .data(Array("bin".utf8)))
        XCTAssertEqual(a["labl"], .string("L"))
        XCTAssertEqual(a["gena"], .data([0, 1]))
    }

    func testCreationAndModificationDatesSetByStore() throws {
        try vault.addPassword(service: "s", account: "a", secret: "x", ["cdat": .date(5)])
        let a = try XCTUnwrap(vault.copyMatching(["class": "genp", "r_Attributes": true], accessGroups: groups).value?.item?.attributes)
        guard case .date(let c) = a["cdat"], case .date(let m) = a["mdat"] else { return XCTFail("no dates") }
        XCTAssertEqual(c, m)
        XCTAssertGreaterThan(c, 8e8)  // after 2026 in Apple's absolute time
    }

    func testAccessGroupsEntitlements() throws {
        // No agrp: the caller's first group.
        try vault.addPassword(service: "s", account: "a", secret: "x", groups: ["app.shared", "app.default"])
        XCTAssertEqual(try vault.password(service: "s", account: "a", groups: ["app.shared"]), "x")
        XCTAssertStatus(.itemNotFound, try vault.password(service: "s", account: "a", groups: ["app.default"]))
        // Naming a group the caller lacks.
        XCTAssertStatus(.missingEntitlement, try vault.addPassword(service: "s", account: "b", secret: "x",
                                                                   ["agrp": "other"]))
        XCTAssertStatus(.missingEntitlement, try vault.copyMatching(["class": "genp", "agrp": "other"], accessGroups: groups))
        XCTAssertStatus(.missingEntitlement, try vault.addPassword(service: "s", account: "c", secret: "x", groups: []))
        // A caller with no groups at all sees nothing.
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(["class": "genp"], accessGroups: []))
        XCTAssertStatus(.itemNotFound, try vault.delete(["class": "genp"], accessGroups: []))
        // A search without agrp covers all of the caller's groups.
        try vault.addPassword(service: "s", account: "d", secret: "y", ["agrp": "app.default"])
        let all = try vault.copyMatching(["class": "genp", "svce": "s", "m_Limit": "m_LimitAll", "r_Attributes": true],
                                         accessGroups: groups)
        XCTAssertEqual(all.array?.count, 2)
    }
}
