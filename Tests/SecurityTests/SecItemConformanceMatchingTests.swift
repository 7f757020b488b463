import Foundation
import KeychainTestSupport
import Security
import XCTest

/// PRODUCT 2 and 3: synchronizable matching, access groups, and the primary key of each class
/// (errSecDuplicateItem).
final class SecItemConformanceMatchingTests: SecItemConformanceCase {
    // MARK: Synchronizable

    /// A service with one item with sync=0 ("local") and one with sync=1 ("synced").
    func makeSyncFixture(_ tag: String = #function) -> String {
        let service = unique(tag)
        assertStatus(addPassword(service: service, account: "local", data: Data("l".utf8)), errSecSuccess, "add local")
        assertStatus(addPassword(service: service, account: "synced", data: Data("s".utf8),
                                 [kSecAttrSynchronizable as String: kCFBooleanTrue!]), errSecSuccess, "add synced")
        return service
    }

    func accounts(_ query: [String: Any], file: StaticString = #filePath, line: UInt = #line) -> [String] {
        let (status, result) = copyMatching(query.merging([kSecReturnAttributes as String: true,
                                                           kSecMatchLimit as String: kSecMatchLimitAll]) { $1 })
        if status == errSecItemNotFound { return [] }
        assertStatus(status, errSecSuccess, file: file, line: line)
        return (result as? [[String: Any]] ?? []).compactMap { $0[kSecAttrAccount as String] as? String }.sorted()
    }

    func testQueryWithoutSynchronizableSeesOnlyNonSyncItems() {
        let service = makeSyncFixture()
        XCTAssertEqual(accounts(genp(service)), ["local"])
        XCTAssertEqual(accounts(genp(service, "synced")), [], "a sync=1 item is invisible without kSecAttrSynchronizable")
        assertStatus(SecItemDelete(genp(service, "synced") as CFDictionary), errSecItemNotFound, "delete without sync")
    }

    func testSynchronizableAnyMatchesBoth() {
        let service = makeSyncFixture()
        let any = genp(service).merging([kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) { $1 }
        XCTAssertEqual(accounts(any), ["local", "synced"])
        // The returned attributes say which is which, as 0/1.
        let synced = attributesOf(genp(service, "synced").merging([kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) { $1 })
        XCTAssertEqual(synced?[kSecAttrSynchronizable as String] as? NSNumber, 1)
        let local = attributesOf(genp(service, "local").merging([kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) { $1 })
        XCTAssertEqual(local?[kSecAttrSynchronizable as String] as? NSNumber, 0)
    }

    func testSynchronizableTrueMatchesOnlySyncItems() {
        let service = makeSyncFixture()
        XCTAssertEqual(accounts(genp(service).merging([kSecAttrSynchronizable as String: true]) { $1 }), ["synced"])
        XCTAssertEqual(accounts(genp(service).merging([kSecAttrSynchronizable as String: kCFBooleanFalse!]) { $1 }), ["local"])
    }

    func testSyncAndNonSyncItemsWithTheSameKeyAreDistinct() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "same"), errSecSuccess)
        assertStatus(addPassword(service: service, account: "same", [kSecAttrSynchronizable as String: true]), errSecSuccess,
                     "sync is part of the primary key")
        assertStatus(addPassword(service: service, account: "same", [kSecAttrSynchronizable as String: true]),
                     errSecDuplicateItem)
    }

    func testSynchronizableThisDeviceOnlyIsParam() {
        let status = addPassword(service: unique(), account: "a", [
            kSecAttrSynchronizable as String: true,
            kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
        ])
        assertStatus(status, errSecParam)
    }

    // MARK: Keys Apple's search accepts

    /// securityd's query parser records any `v_` value key it knows (query_add_value:
    /// kSecValueData is kept as the query's data) and does not reject it in a search, so wrappers
    /// that reuse their add dictionary as a search work on iOS.
    func testSearchWithValueDataInTheQueryIgnoresTheData() throws {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("secret".utf8)), errSecSuccess)
        let query = genp(service, "a").merging([kSecValueData as String: Data("secret".utf8),
                                                kSecReturnAttributes as String: true]) { $1 }
        var result: CFTypeRef?
        assertStatus(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [String: Any])?[kSecAttrAccount as String] as? String, "a")
        // Not matched on: other bytes find the item too.
        let other = query.merging([kSecValueData as String: Data("not-the-secret".utf8)]) { $1 }
        result = nil
        assertStatus(SecItemCopyMatching(other as CFDictionary, &result), errSecSuccess, "other data")
        XCTAssertEqual((result as? [String: Any])?[kSecAttrAccount as String] as? String, "a")
    }

    /// securityd's query_add_match records every `m_` key and only interprets the ones it
    /// knows; kSecMatchCaseInsensitive is sent by real iOS wrappers.
    func testSearchAcceptsOtherMatchKeys() throws {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("secret".utf8)), errSecSuccess)
        let query = genp(service, "a").merging([kSecMatchCaseInsensitive as String: kCFBooleanTrue!,
                                                kSecMatchLimit as String: kSecMatchLimitOne,
                                                kSecReturnData as String: true]) { $1 }
        var result: CFTypeRef?
        assertStatus(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(result as? Data, Data("secret".utf8))
        // Recorded, not interpreted: folding keys change nothing, as on iOS.
        for key in [kSecMatchDiacriticInsensitive, kSecMatchWidthInsensitive, kSecMatchSubjectContains,
                    kSecMatchEmailAddressIfPresent] {
            let q = genp(service, "a").merging([key as String: kCFBooleanTrue!, kSecReturnData as String: true]) { $1 }
            XCTAssertEqual(dataOf(q).data, Data("secret".utf8), "\(key)")
        }
        let upper = genp(service, "A").merging([kSecMatchCaseInsensitive as String: kCFBooleanTrue!]) { $1 }
        assertStatus(SecItemCopyMatching(upper as CFDictionary, nil), errSecItemNotFound, "no case folding")
    }

    /// The match keys securityd reads refuse a value of the wrong type: kSecMatchTrustedOnly
    /// takes a boolean, kSecMatchValidOnDate a date, kSecMatchPolicy a policy (none can be sent here).
    func testSearchRefusesCertificateFiltersOfTheWrongType() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a"), errSecSuccess)
        assertStatus(SecItemCopyMatching(genp(service).merging([kSecMatchTrustedOnly as String: kCFBooleanFalse!,
                                                                kSecMatchValidOnDate as String: Date()]) { $1 } as CFDictionary, nil),
                     errSecSuccess, "right types")
        for (key, value) in [(kSecMatchTrustedOnly, "yes" as Any), (kSecMatchValidOnDate, "today"), (kSecMatchPolicy, "ssl")] {
            assertStatus(SecItemCopyMatching(genp(service).merging([key as String: value]) { $1 } as CFDictionary, nil),
                         errSecParam, "\(key)")
        }
    }

    // MARK: Access groups

    func testAddWithoutAccessGroupGoesToTheCallersFirstGroup() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a"), errSecSuccess)
        XCTAssertEqual(attributesOf(genp(service))?[kSecAttrAccessGroup as String] as? String, "default")
        // A search without agrp covers the caller's groups; naming the group finds it too.
        XCTAssertEqual(count(genp(service)), 1)
        XCTAssertEqual(count(genp(service).merging([kSecAttrAccessGroup as String: "default"]) { $1 }), 1)
    }

    func testGroupTheCallerLacksIsMissingEntitlement() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a"), errSecSuccess)
        let other = [kSecAttrAccessGroup as String: "group.com.example.not-mine"]
        assertStatus(addPassword(service: service, account: "b", other), errSecMissingEntitlement, "add")
        let search = genp(service).merging(other) { $1 }
        var result: CFTypeRef?
        assertStatus(SecItemCopyMatching(search.merging([kSecReturnData as String: true]) { $1 } as CFDictionary, &result),
                     errSecMissingEntitlement, "search")
        XCTAssertNil(result)
        assertStatus(SecItemUpdate(search as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary),
                     errSecMissingEntitlement, "update query")
        assertStatus(SecItemDelete(search as CFDictionary), errSecMissingEntitlement, "delete")
        XCTAssertEqual(count(genp(service)), 1, "nothing was added or deleted")
    }

    // MARK: Primary keys

    /// Adds `base` merged with each variant: `distinct` ones must succeed, `same` ones must be
    /// errSecDuplicateItem.
    func checkPrimaryKey(base: [String: Any], distinct: [String: [String: Any]], same: [String: [String: Any]],
                         file: StaticString = #filePath, line: UInt = #line) {
        assertStatus(SecItemAdd(base as CFDictionary, nil), errSecSuccess, "base", file: file, line: line)
        assertStatus(SecItemAdd(base as CFDictionary, nil), errSecDuplicateItem, "base twice", file: file, line: line)
        for (name, change) in distinct.sorted(by: { $0.key < $1.key }) {
            let item = base.merging(change) { $1 }
            assertStatus(SecItemAdd(item as CFDictionary, nil), errSecSuccess, "differs in \(name)", file: file, line: line)
            assertStatus(SecItemAdd(item as CFDictionary, nil), errSecDuplicateItem, "differs in \(name), twice",
                         file: file, line: line)
        }
        for (name, change) in same.sorted(by: { $0.key < $1.key }) {
            let item = base.merging(change) { $1 }
            assertStatus(SecItemAdd(item as CFDictionary, nil), errSecDuplicateItem, "differs only in \(name)",
                         file: file, line: line)
        }
    }

    func testGenericPasswordPrimaryKeyIsAccountAndService() {
        let service = unique()
        checkPrimaryKey(
            base: genp(service, "acct").merging([kSecValueData as String: Data("1".utf8)]) { $1 },
            distinct: ["acct": [kSecAttrAccount as String: "acct2"], "svce": [kSecAttrService as String: service + "-2"]],
            same: ["labl": [kSecAttrLabel as String: "other label"],
                   "desc": [kSecAttrDescription as String: "other"],
                   "gena": [kSecAttrGeneric as String: Data([9])],
                   "pdmn": [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock],
                   "v_Data": [kSecValueData as String: Data("2".utf8)]])
    }

    func testMissingPrimaryKeyAttributesCountAsEmpty() {
        let service = unique()
        let onlyService: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]
        assertStatus(SecItemAdd(onlyService as CFDictionary, nil), errSecSuccess)
        let emptyAccount = onlyService.merging([kSecAttrAccount as String: ""]) { $1 }
        assertStatus(SecItemAdd(emptyAccount as CFDictionary, nil), errSecDuplicateItem)
        XCTAssertEqual(count(emptyAccount), 1, "a search for acct \"\" finds the item without acct")
    }

    func internetPassword(_ server: String) -> [String: Any] {
        [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrServer as String: server,
            kSecAttrAccount as String: "user",
            kSecAttrSecurityDomain as String: "realm",
            kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
            kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTMLForm,
            kSecAttrPort as String: 443,
            kSecAttrPath as String: "/login",
            kSecValueData as String: Data("pw".utf8),
        ]
    }

    func testInternetPasswordPrimaryKey() {
        let server = unique() + ".example.com"
        checkPrimaryKey(
            base: internetPassword(server),
            distinct: ["acct": [kSecAttrAccount as String: "other-user"],
                       "sdmn": [kSecAttrSecurityDomain as String: "other-realm"],
                       "srvr": [kSecAttrServer as String: "other." + server],
                       "ptcl": [kSecAttrProtocol as String: kSecAttrProtocolHTTP],
                       "atyp": [kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTTPBasic],
                       "port": [kSecAttrPort as String: 8443],
                       "path": [kSecAttrPath as String: "/admin"]],
            same: ["labl": [kSecAttrLabel as String: "label"],
                   "icmt": [kSecAttrComment as String: "comment"],
                   "pdmn": [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]])
    }

    func testInternetPasswordsAreFoundByEachPrimaryKeyAttribute() {
        let server = unique() + ".example.com"
        let base = internetPassword(server)
        for port in [443, 8443, 9443] {
            assertStatus(SecItemAdd(base.merging([kSecAttrPort as String: port]) { $1 } as CFDictionary, nil), errSecSuccess)
        }
        assertStatus(SecItemAdd(base.merging([kSecAttrPath as String: "/other"]) { $1 } as CFDictionary, nil), errSecSuccess)
        let byServer: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: server]
        XCTAssertEqual(count(byServer), 4)
        XCTAssertEqual(count(byServer.merging([kSecAttrPort as String: 8443]) { $1 }), 1)
        XCTAssertEqual(count(byServer.merging([kSecAttrPath as String: "/login"]) { $1 }), 3)
        XCTAssertEqual(count(byServer.merging([kSecAttrProtocol as String: kSecAttrProtocolHTTPS]) { $1 }), 4)
        XCTAssertEqual(count(byServer.merging([kSecAttrProtocol as String: kSecAttrProtocolFTP]) { $1 }), 0)
        let attrs = attributesOf(byServer.merging([kSecAttrPort as String: 9443]) { $1 })
        XCTAssertEqual(attrs?[kSecAttrPort as String] as? NSNumber, 9443)
        XCTAssertEqual(attrs?[kSecAttrSecurityDomain as String] as? String, "realm")
        XCTAssertEqual(attrs?[kSecAttrAuthenticationType as String] as? String, "form")
        XCTAssertEqual(attrs?[kSecClass as String] as? String, "inet")
    }

    func testCertificatePrimaryKey() {
        let issuer = Data(unique().utf8)
        checkPrimaryKey(
            base: [kSecClass as String: kSecClassCertificate,
                   kSecAttrCertificateType as String: 3,
                   kSecAttrIssuer as String: issuer,
                   kSecAttrSerialNumber as String: Data([1, 2, 3]),
                   kSecValueData as String: Data([0x30, 0x82])],
            distinct: ["ctyp": [kSecAttrCertificateType as String: 2],
                       "issr": [kSecAttrIssuer as String: issuer + Data([0])],
                       "slnr": [kSecAttrSerialNumber as String: Data([1, 2, 4])]],
            same: ["labl": [kSecAttrLabel as String: "cert label"],
                   "subj": [kSecAttrSubject as String: Data([7])],
                   "pdmn": [kSecAttrAccessible as String: kSecAttrAccessibleAlways]])
    }

    func testKeyPrimaryKey() {
        let tag = Data(unique().utf8)
        checkPrimaryKey(
            base: [kSecClass as String: kSecClassKey,
                   kSecAttrKeyClass as String: "1",  // kSecAttrKeyClassPrivate
                   kSecAttrApplicationLabel as String: Data([0xAA]),
                   kSecAttrApplicationTag as String: tag,
                   kSecAttrKeyType as String: "73",  // kSecAttrKeyTypeECSECPrimeRandom
                   kSecAttrKeySizeInBits as String: 256,
                   kSecAttrEffectiveKeySize as String: 256,
                   kSecValueData as String: Data(repeating: 1, count: 32)],
            distinct: ["kcls": [kSecAttrKeyClass as String: "0"],
                       "klbl": [kSecAttrApplicationLabel as String: Data([0xAB])],
                       "atag": [kSecAttrApplicationTag as String: tag + Data([0])],
                       "type": [kSecAttrKeyType as String: "42"],
                       "bsiz": [kSecAttrKeySizeInBits as String: 384],
                       "esiz": [kSecAttrEffectiveKeySize as String: 128],
                       "crtr": [kSecAttrCreator as String: 7]],
            same: ["labl": [kSecAttrLabel as String: "key label"],
                   "sign": [kSecAttrCanSign as String: true],
                   "pdmn": [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]])
    }
}
