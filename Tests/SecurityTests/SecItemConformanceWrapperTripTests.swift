import Foundation
import KeychainTestSupport
import Security
import XCTest

/// What third-party keychain wrappers' own test suites tripped on (issue 16, findings 1-3), each
/// pinned to Apple's behaviour through the real daemon.
final class SecItemConformanceWrapperTripTests: SecItemConformanceCase {
    /// Every return key at once, as wrappers send it for "get everything about this item".
    func everything(_ service: String) -> [String: Any] {
        genp(service).merging([kSecReturnData as String: true, kSecReturnAttributes as String: true,
                               kSecReturnRef as String: true, kSecReturnPersistentRef as String: true,
                               kSecMatchLimit as String: kSecMatchLimitOne]) { $1 }
    }

    // MARK: 1. kSecReturnRef beside other return keys on a password

    func testReturnRefBesideOtherReturnKeysIsIgnoredForPasswords() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("s3cret".utf8)), errSecSuccess)
        let (status, result) = copyMatching(everything(service))
        assertStatus(status, errSecSuccess, "all four return keys")
        guard let item = result as? [String: Any] else { return XCTFail("expected a dictionary, got \(shape(result))") }
        XCTAssertEqual(item[kSecValueData as String] as? Data, Data("s3cret".utf8))
        XCTAssertEqual(item[kSecAttrAccount as String] as? String, "a")
        XCTAssertNotNil(item[kSecValuePersistentRef as String] as? Data)
        XCTAssertNil(item[kSecValueRef as String], "a password has no object reference")
    }

    func testReturnRefBesideOtherReturnKeysWithNoMatchIsItemNotFound() {
        let (status, result) = copyMatching(everything(unique()))
        assertStatus(status, errSecItemNotFound, "nothing matches")
        XCTAssertNil(result)
    }

    // MARK: 2. A persistent reference names its item whatever its sync

    func testPersistentRefFindsAndDeletesASynchronizableItem() {
        let service = unique()
        let add: [String: Any] = genp(service, "a").merging([kSecAttrSynchronizable as String: true,
                                                             kSecValueData as String: Data("synced".utf8),
                                                             kSecReturnPersistentRef as String: true]) { $1 }
        var added: CFTypeRef?
        assertStatus(SecItemAdd(add as CFDictionary, &added), errSecSuccess, "add sync=1")
        guard let ref = added as? Data else { return XCTFail("no persistent reference: \(shape(added))") }

        // A wrapper that migrates by reference reads the item with no sync key in the query...
        let (status, result) = copyMatching([kSecValuePersistentRef as String: ref, kSecReturnData as String: true])
        assertStatus(status, errSecSuccess, "read by persistent reference")
        XCTAssertEqual(result as? Data, Data("synced".utf8))
        let attributes = attributesOf([kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: ref])
        XCTAssertEqual(attributes?[kSecAttrSynchronizable as String] as? Bool, true)
        // ... an update by reference reaches it ...
        let update = SecItemUpdate([kSecValuePersistentRef as String: ref] as CFDictionary,
                                   [kSecAttrLabel as String: "moved"] as CFDictionary)
        assertStatus(update, errSecSuccess, "update by persistent reference")
        // ... a query that says sync=0 still excludes it ...
        let (notSynced, _) = copyMatching([kSecValuePersistentRef as String: ref, kSecAttrSynchronizable as String: false,
                                           kSecReturnData as String: true])
        assertStatus(notSynced, errSecItemNotFound, "persistent reference with sync=0")
        // ... and a delete by reference deletes exactly that item.
        assertStatus(SecItemDelete([kSecValuePersistentRef as String: ref] as CFDictionary), errSecSuccess, "delete by reference")
        let (gone, _) = copyMatching(genp(service).merging([kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) { $1 })
        assertStatus(gone, errSecItemNotFound, "the item is gone")
    }

    // MARK: 3. Returned dictionaries cast to [AnyHashable: Any] and compared

    func testAttributesCastToAnyHashableFindTheirKeysAsOnApple() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "bob", data: Data("pw".utf8),
                                 [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]), errSecSuccess)
        let (status, result) = copyMatching(genp(service).merging([kSecReturnAttributes as String: true]) { $1 })
        assertStatus(status, errSecSuccess)
        guard let attributes = result as? [AnyHashable: Any] else { return XCTFail("expected a dictionary, got \(shape(result))") }
        XCTAssertEqual(attributes[kSecAttrAccount] as? String, "bob", "keyed by the constant")
        XCTAssertEqual(attributes["acct"] as? String, "bob", "keyed by the raw string")
        XCTAssertEqual(attributes[kSecAttrAccount as String] as? String, "bob", "keyed by the constant as String")
        XCTAssertEqual(attributes[kSecAttrService] as? String, service)
        // A value that is a kSec constant compares equal to the constant.
        XCTAssertEqual(attributes[kSecAttrAccessible] as? String, kSecAttrAccessibleAfterFirstUnlock as String)
        let returned = NSDictionary(dictionary: [kSecAttrAccount: attributes[kSecAttrAccount]!,
                                                 kSecAttrAccessible: attributes[kSecAttrAccessible]!])
        let expected: [AnyHashable: Any] = ["acct": "bob", "pdmn": kSecAttrAccessibleAfterFirstUnlock]
        XCTAssertTrue(returned.isEqual(to: expected), "\(returned) != \(expected)")
        XCTAssertTrue(NSDictionary(dictionary: ["pdmn": "ck"]).isEqual(to: ["pdmn": kSecAttrAccessibleAfterFirstUnlock]))
        // Sets and dictionaries of constants meet the raw strings.
        let keys = Set(attributes.keys)
        XCTAssertTrue(keys.contains(kSecAttrAccount) && keys.contains("svce"))
        XCTAssertEqual(AnyHashable(kSecClassGenericPassword), AnyHashable("genp"))
    }

    func testQueryKeyedByConstantsAsAnyHashableIsUnderstood() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "carol", data: Data("pw2".utf8)), errSecSuccess)
        // [AnyHashable: Any] built from the constants themselves, as some wrappers do.
        let query: [AnyHashable: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrService: service,
                                         kSecReturnData: true]
        var result: CFTypeRef?
        assertStatus(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(result as? Data, Data("pw2".utf8))
    }
}
