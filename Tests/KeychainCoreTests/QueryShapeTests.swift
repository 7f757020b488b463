import KeychainCore
import KeychainCrypto
import XCTest

/// PRODUCT 3: CopyMatching return shapes, limits, order and synchronizable matching.
final class QueryShapeTests: XCTestCase {
    var scratch: Scratch!

    // XCTest keeps every test case alive to the end of the run: the scratch directory goes now.
    override func tearDown() { scratch = nil }
    var vault: Vault!

    override func setUpWithError() throws {
        scratch = try Scratch()
        vault = try scratch.makeVault()
        // Inserted in this order; the accounts sort differently on purpose.
        for (account, value) in [("zulu", "1"), ("alpha", "2"), ("mike", "3")] {
            try vault.addPassword(service: "svc", account: account, secret: value, ["labl": .string("L-\(account)")])
        }
        try vault.add(["class": "genp", "svce": "empty", "acct": "nodata"], accessGroups: groups)
    }

    func query(_ extra: Attributes) -> Attributes {
        var q: Attributes = ["class": "genp", "svce": "svc"]
        q.merge(extra) { _, b in b }
        return q
    }

    func testNoReturnKeyGivesStatusOnly() throws {
        guard case .none = try vault.copyMatching(query([:]), accessGroups: groups) else { return XCTFail() }
        guard case .none = try vault.copyMatching(query(["m_Limit": "m_LimitAll"]), accessGroups: groups) else { return XCTFail() }
    }

    func testReturnDataAloneIsBareData() throws {
        let r = try vault.copyMatching(query(["acct": "alpha", "r_Data": true]), accessGroups: groups)
        XCTAssertEqual(r.value?.data?.string, "2")
    }

    func testItemWithoutDataReturnsEmptyData() throws {
        let r = try vault.copyMatching(["class": "genp", "svce": "empty", "r_Data": true], accessGroups: groups)
        XCTAssertEqual(r.value?.data?.count, 0)
    }

    func testReturnPersistentRefAloneIsBareRefThatFindsTheItem() throws {
        let r = try vault.copyMatching(query(["acct": "mike", "r_PersistentRef": true]), accessGroups: groups)
        guard case .persistentRef(let ref)? = r.value else { return XCTFail("\(r)") }
        XCTAssertEqual(ref.count, 20)
        XCTAssertEqual(Array(ref[0..<4]), Array("genp".utf8))
        // A query by reference alone, without a class.
        let byRef = try vault.copyMatching(["v_PersistentRef": .data(ref), "r_Data": true], accessGroups: groups)
        XCTAssertEqual(byRef.value?.data?.string, "3")
        XCTAssertStatus(.param, try vault.copyMatching(["v_PersistentRef": .data([1, 2])], accessGroups: groups))
    }

    func testReturnAttributesGivesOneFlatDictionary() throws {
        let r = try vault.copyMatching(query(["acct": "alpha", "r_Attributes": true]), accessGroups: groups)
        let item = try XCTUnwrap(r.value?.item)
        XCTAssertEqual(item.attributes["acct"], "alpha")
        XCTAssertEqual(item.attributes["svce"], "svc")
        XCTAssertEqual(item.attributes["labl"], "L-alpha")
        XCTAssertNil(item.secret)
        XCTAssertNil(item.persistentRef)
    }

    func testSeveralReturnKeysGiveDictionaryWithValues() throws {
        let r = try vault.copyMatching(query(["acct": "alpha", "r_Attributes": true, "r_Data": true,
                                              "r_PersistentRef": true]), accessGroups: groups)
        let item = try XCTUnwrap(r.value?.item)
        XCTAssertEqual(item.secret?.string, "2")
        XCTAssertEqual(item.persistentRef?.count, 20)
        XCTAssertEqual(item.attributes["acct"], "alpha")
        // Data and reference without attributes: a dictionary holding just the two values.
        let r2 = try vault.copyMatching(query(["acct": "alpha", "r_Data": true, "r_PersistentRef": true]), accessGroups: groups)
        let item2 = try XCTUnwrap(r2.value?.item)
        XCTAssertEqual(item2.secret?.string, "2")
        XCTAssertNotNil(item2.persistentRef)
        XCTAssertTrue(item2.attributes.isEmpty)
    }

    func testDefaultLimitIsOneInInsertionOrder() throws {
        let r = try vault.copyMatching(query(["r_Attributes": true]), accessGroups: groups)
        XCTAssertEqual(r.value?.item?.attributes["acct"], "zulu")
    }

    func testLimitAllReturnsArrayInInsertionOrder() throws {
        let r = try vault.copyMatching(query(["m_Limit": "m_LimitAll", "r_Attributes": true]), accessGroups: groups)
        XCTAssertEqual(r.array?.compactMap { $0.item?.attributes["acct"]?.stringValue }, ["zulu", "alpha", "mike"])
    }

    func testLimitAllWithOneHitIsStillAnArray() throws {
        let r = try vault.copyMatching(query(["acct": "mike", "m_Limit": "m_LimitAll", "r_Attributes": true]), accessGroups: groups)
        XCTAssertEqual(r.array?.count, 1)
    }

    func testReturnDataWithLimitAllGivesArrayOfData() throws {
        let r = try vault.copyMatching(query(["m_Limit": "m_LimitAll", "r_Data": true]), accessGroups: groups)
        XCTAssertEqual(r.array?.compactMap { $0.data?.string }, ["1", "2", "3"])
    }

    func testNumericLimit() throws {
        let r = try vault.copyMatching(query(["m_Limit": 2, "r_Data": true]), accessGroups: groups)
        XCTAssertEqual(r.array?.compactMap { $0.data?.string }, ["1", "2"])
        let one = try vault.copyMatching(query(["m_Limit": 1, "r_Data": true]), accessGroups: groups)
        XCTAssertEqual(one.array?.count, 1, "a numeric limit returns an array")
        XCTAssertStatus(.param, try vault.copyMatching(query(["m_Limit": 0]), accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(query(["m_Limit": "m_LimitSome"]), accessGroups: groups))
    }

    func testNoMatchIsItemNotFound() throws {
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(query(["acct": "nobody"]), accessGroups: groups))
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(query(["labl": "nothing", "r_Data": true]), accessGroups: groups))
    }

    func testFilterOnNonKeyAttribute() throws {
        let r = try vault.copyMatching(query(["labl": "L-mike", "r_Data": true]), accessGroups: groups)
        XCTAssertEqual(r.value?.data?.string, "3")
    }

    func testSynchronizableMatching() throws {
        try vault.addPassword(service: "sync", account: "local", secret: "l")
        try vault.addPassword(service: "sync", account: "cloud", secret: "c", ["sync": true])
        let plain = try vault.copyMatching(["class": "genp", "svce": "sync", "m_Limit": "m_LimitAll", "r_Data": true],
                                           accessGroups: groups)
        XCTAssertEqual(plain.array?.compactMap { $0.data?.string }, ["l"], "no sync key sees only sync=0")
        let any = try vault.copyMatching(["class": "genp", "svce": "sync", "sync": "syna", "m_Limit": "m_LimitAll",
                                          "r_Data": true], accessGroups: groups)
        XCTAssertEqual(any.array?.compactMap { $0.data?.string }, ["l", "c"])
        let only = try vault.copyMatching(["class": "genp", "svce": "sync", "sync": true, "m_Limit": "m_LimitAll",
                                           "r_Data": true], accessGroups: groups)
        XCTAssertEqual(only.array?.compactMap { $0.data?.string }, ["c"])
    }

    func testReturnKeysAreCheckedAndUnknownKeysRejected() throws {
        XCTAssertStatus(.param, try vault.copyMatching(query(["r_Data": "yes"]), accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(query(["r_Other": true]), accessGroups: groups))
        // Other match keys and a value in a search are accepted and ignored, as Apple's are.
        XCTAssertNoThrow(try vault.copyMatching(query(["m_CaseInsensitive": true]), accessGroups: groups))
        XCTAssertNoThrow(try vault.copyMatching(query(["v_Data": .data([1])]), accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(query(["v_Ref": .data([1])]), accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(query(["r_Ref": true]), accessGroups: groups))
        // Authentication UI hints are accepted.
        XCTAssertNoThrow(try vault.copyMatching(query(["u_AuthUI": "u_AuthUIF", "nleg": true]), accessGroups: groups))
    }

    /// securityd's query_add_match: the match keys it only records are accepted with any value
    /// and change nothing; the ones it reads refuse a value of the wrong type.
    func testMatchKeysAreRecordedOrCheckedAsSecuritydDoes() throws {
        let ignored: [AttributeKey] = ["m_CaseInsensitive", "m_DiacriticInsensitive", "m_WidthInsensitive",
                                       "m_SubjectContains", "m_SubjectWholeString", "m_EmailAddressIfPresent",
                                       "m_SearchList", "m_ItemList", "m_Issuers", "m_SomethingNew"]
        for key in ignored {
            for value: AttributeValue in [true, "ALPHA", .number(3), .data([1])] {
                let r = try vault.copyMatching(query(["acct": "alpha", "r_Data": true, key: value]), accessGroups: groups)
                XCTAssertEqual(r.value?.data?.string, "2", "\(key) \(value)")
            }
        }
        // Not a case-insensitive match: the flag is ignored, as securityd ignores it.
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(query(["acct": "ALPHA", "m_CaseInsensitive": true]),
                                                              accessGroups: groups))
        XCTAssertNoThrow(try vault.copyMatching(query(["m_ValidOnDate": .date(0), "m_TrustedOnly": false]), accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(query(["m_ValidOnDate": "today"]), accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(query(["m_TrustedOnly": .number(1)]), accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(query(["m_Policy": .data([1])]), accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(query(["m_Limit": "m_LimitSome"]), accessGroups: groups))
        // Update takes no match key at all; delete ignores their values (macOS drops them).
        XCTAssertStatus(.param, try vault.update(query(["m_CaseInsensitive": true]), changes: ["labl": "x"], accessGroups: groups))
        try vault.delete(query(["acct": "alpha", "m_CaseInsensitive": true, "m_ValidOnDate": "today"]), accessGroups: groups)
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(query(["acct": "alpha"]), accessGroups: groups))
    }

    /// securityd keeps kSecValueData of a search or delete query as the query's data and does
    /// not match on it: wrappers that reuse their add dictionary find and delete the item.
    func testValueDataInASearchOrDeleteIsIgnored() throws {
        let r = try vault.copyMatching(query(["acct": "alpha", "v_Data": "not-the-secret", "r_Data": true]), accessGroups: groups)
        XCTAssertEqual(r.value?.data?.string, "2")
        try vault.delete(query(["acct": "mike", "v_Data": .data([9])]), accessGroups: groups)
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(query(["acct": "mike"]), accessGroups: groups))
        // An update's query keeps it the same way; the secret changes only through the changes.
        try vault.update(query(["acct": "zulu", "v_Data": "other"]), changes: ["labl": "x"], accessGroups: groups)
        let z = try vault.copyMatching(query(["acct": "zulu", "r_Data": true, "r_Attributes": true]), accessGroups: groups)
        XCTAssertEqual(z.value?.item?.attributes["labl"], "x")
        XCTAssertEqual(z.value?.item?.secret?.string, "1")
    }

    func testReturnRefOnPasswordsIsParamInAddAndSearch() throws {
        XCTAssertStatus(.param, try vault.add(["class": "genp", "svce": "r", "r_Ref": true], accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(query(["r_Ref": true]), accessGroups: groups))
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(["class": "genp", "svce": "r"], accessGroups: groups))
    }

    func testReturnRefBesideOtherReturnKeysIsIgnoredForPasswords() throws {
        let r = try vault.copyMatching(query(["acct": "alpha", "r_Data": true, "r_Attributes": true, "r_Ref": true,
                                              "r_PersistentRef": true]), accessGroups: groups)
        XCTAssertEqual(r.value?.item?.secret?.string, "2")
        XCTAssertEqual(r.value?.item?.attributes["acct"], "alpha")
        XCTAssertNotNil(r.value?.item?.persistentRef)
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(query(["acct": "none", "r_Data": true, "r_Ref": true]),
                                                                accessGroups: groups))
    }

    func testReturnRefOnACertificateReturnsItsDataAttributesAndReference() throws {
        // The client builds the SecCertificate from the DER, the item's data.
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(["class": "cert", "r_Ref": true], accessGroups: groups))
        try vault.add(["class": "cert", "ctyp": 3, "issr": .data([1]), "slnr": .data([2]), "labl": "c"],
                      secret: try SecureBytes(copying: [0x30, 0]), accessGroups: groups)
        let r = try vault.copyMatching(["class": "cert", "labl": "c", "r_Ref": true], accessGroups: groups)
        XCTAssertEqual(r.value?.item?.secret?.withUnsafeBytes { Array($0) }, [0x30, 0])
        XCTAssertEqual(r.value?.item?.attributes["labl"], "c")
        XCTAssertNotNil(r.value?.item?.persistentRef)
        // The primary key is (ctyp, issr, slnr) in a group: the same three again are a duplicate.
        XCTAssertStatus(.duplicateItem, try vault.add(["class": "cert", "ctyp": 3, "issr": .data([1]), "slnr": .data([2]), "labl": "d"],
                                                      secret: try SecureBytes(copying: [0x30, 0]), accessGroups: groups))
        XCTAssertNoThrow(try vault.add(["class": "cert", "ctyp": 3, "issr": .data([1]), "slnr": .data([3])],
                                       secret: try SecureBytes(copying: [0x30, 0]), accessGroups: groups))
    }

    func testReturnRefOnAKeyReturnsItsAttributesAndReferenceNotItsBytes() throws {
        // The client builds the SecKey from these; the private key stays in the vault.
        try vault.add(["class": "keys", "kcls": 1, "type": 73, "atag": "t", "pubk": .data([4, 9])],
                      secret: try SecureBytes(copying: [4, 1, 2]), accessGroups: groups)
        let r = try vault.copyMatching(["class": "keys", "atag": "t", "r_Ref": true], accessGroups: groups)
        XCTAssertNil(r.value?.item?.secret, "no key bytes for a reference")
        XCTAssertEqual(r.value?.item?.attributes["kcls"], .number(1))
        XCTAssertEqual(r.value?.item?.attributes["pubk"], .data([4, 9]))
        let ref = try XCTUnwrap(r.value?.item?.persistentRef.flatMap(PersistentRef.init(bytes:)))
        XCTAssertEqual(try vault.privateKey(ref, accessGroups: groups).secret.withUnsafeBytes { Array($0) }, [4, 1, 2])
        XCTAssertStatus(.itemNotFound, try vault.privateKey(ref, accessGroups: ["other"]))
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(["class": "keys", "atag": "none", "r_Ref": true], accessGroups: groups))
    }

    func testNonExtractablePrivateKeyBytesAreNeverReturned() throws {
        try vault.add(["class": "keys", "kcls": 1, "type": 73, "atag": "sealed", "extr": false],
                      secret: try SecureBytes(copying: [4, 1, 2]), accessGroups: groups)
        try vault.add(["class": "keys", "kcls": 0, "type": 73, "atag": "sealed", "extr": false],
                      secret: try SecureBytes(copying: [4, 7]), accessGroups: groups)
        XCTAssertStatus(.dataNotAvailable, try vault.copyMatching(["class": "keys", "atag": "sealed", "kcls": 1, "r_Data": true],
                                                                  accessGroups: groups))
        XCTAssertStatus(.dataNotAvailable, try vault.copyMatching(["class": "keys", "atag": "sealed", "r_Data": true, "m_Limit": "m_LimitAll"],
                                                                  accessGroups: groups))  // one unreadable key refuses the whole answer
        XCTAssertEqual(try vault.copyMatching(["class": "keys", "atag": "sealed", "kcls": 0, "r_Data": true], accessGroups: groups)
            .value?.data?.withUnsafeBytes { Array($0) }, [4, 7], "a public key is always readable")
        let found = try vault.copyMatching(["class": "keys", "atag": "sealed", "kcls": 1, "r_PersistentRef": true], accessGroups: groups)
        guard case .persistentRef(let bytes)? = found.value, let ref = PersistentRef(bytes: bytes) else { return XCTFail() }
        XCTAssertEqual(try vault.privateKey(ref, accessGroups: groups).secret.count, 3, "but it can be used")
    }

    func testPersistentRefNamesASynchronizableItemWithoutSyncInTheQuery() throws {
        let added = try vault.add(["class": "genp", "svce": "s", "acct": "a", "sync": true, "r_PersistentRef": true],
                                  secret: try secret("synced"), accessGroups: groups)
        guard case .persistentRef(let ref)? = added.value else { return XCTFail() }
        XCTAssertEqual(try vault.copyMatching(["v_PersistentRef": .data(ref), "r_Data": true], accessGroups: groups).value?.data?.string,
                       "synced")
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(["v_PersistentRef": .data(ref), "sync": false, "r_Data": true],
                                                                accessGroups: groups))
        _ = try vault.update(["v_PersistentRef": .data(ref)], changes: ["labl": "moved"], accessGroups: groups)
        _ = try vault.delete(["v_PersistentRef": .data(ref)], accessGroups: groups)
        XCTAssertStatus(.itemNotFound, try vault.copyMatching(["class": "genp", "svce": "s", "sync": "syna"], accessGroups: groups))
    }

    func testAddWithReturnKeys() throws {
        let r = try vault.add(["class": "genp", "svce": "new", "acct": "a", "r_PersistentRef": true],
                              secret: secret("n"), accessGroups: groups)
        guard case .persistentRef(let ref)? = r.value else { return XCTFail() }
        XCTAssertEqual(try vault.copyMatching(["v_PersistentRef": .data(ref), "r_Data": true], accessGroups: groups).value?.data?.string, "n")
        let r2 = try vault.add(["class": "genp", "svce": "new", "acct": "b", "v_Data": "vd", "r_Attributes": true],
                               accessGroups: groups)
        XCTAssertEqual(r2.value?.item?.attributes["acct"], "b")
        XCTAssertEqual(try vault.password(service: "new", account: "b"), "vd")
    }
}
