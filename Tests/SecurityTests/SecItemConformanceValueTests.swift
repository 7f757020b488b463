import Foundation
import KeychainTestSupport
import Security
import XCTest

/// PRODUCT 3 and issue 4: how values and dictionaries are taken — numeric strings, booleans,
/// String vs Data, optionals, `[CFString: Any]` and `[String: Any]`, kCFBooleanTrue with and
/// without `!`.
final class SecItemConformanceValueTests: SecItemConformanceCase {
    func testNumericStringsAreStoredAsNumbers() {
        let server = unique() + ".example.com"
        let add: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrServer as String: server,
            kSecAttrAccount as String: "user",
            kSecAttrPort as String: "443",
            kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
            kSecAttrType as String: "1234",
            kSecAttrCreator as String: "abcd",
        ]
        assertStatus(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        let query: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: server]
        let attrs = attributesOf(query)
        XCTAssertEqual(attrs?[kSecAttrPort as String] as? NSNumber, 443)
        XCTAssertFalse(attrs?[kSecAttrPort as String] is String, "port \"443\" must come back as a number")
        XCTAssertEqual(attrs?[kSecAttrType as String] as? NSNumber, 1234)
        // Other strings are kept as given.
        XCTAssertEqual(attrs?[kSecAttrProtocol as String] as? String, "htps")
        XCTAssertEqual(attrs?[kSecAttrCreator as String] as? String, "abcd")
        // The number and its string find the same item.
        XCTAssertEqual(count(query.merging([kSecAttrPort as String: 443]) { $1 }), 1)
        XCTAssertEqual(count(query.merging([kSecAttrPort as String: "443"]) { $1 }), 1)
        XCTAssertEqual(count(query.merging([kSecAttrPort as String: 444]) { $1 }), 0)
    }

    func testBooleansAreStoredAsZeroOrOne() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", [
            kSecAttrIsInvisible as String: true,
            kSecAttrIsNegative as String: kCFBooleanFalse!,
        ]), errSecSuccess)
        let attrs = attributesOf(genp(service))
        XCTAssertEqual(attrs?[kSecAttrIsInvisible as String] as? NSNumber, 1)
        XCTAssertEqual(attrs?[kSecAttrIsNegative as String] as? NSNumber, 0)
        XCTAssertEqual(attrs?[kSecAttrSynchronizable as String] as? NSNumber, 0)
        XCTAssertEqual(attrs?[kSecAttrIsInvisible as String] as? Bool, true)
        // A query may use either spelling.
        XCTAssertEqual(count(genp(service).merging([kSecAttrIsInvisible as String: 1]) { $1 }), 1)
        XCTAssertEqual(count(genp(service).merging([kSecAttrIsInvisible as String: kCFBooleanTrue!]) { $1 }), 1)
        XCTAssertEqual(count(genp(service).merging([kSecAttrIsInvisible as String: false]) { $1 }), 0)
    }

    func testStringAndDataAreKeptAsGiven() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "text", [
            kSecAttrGeneric as String: "generic text",
            kSecAttrLabel as String: "label",
        ]), errSecSuccess)
        let dataAccount = Data([0x64, 0x61, 0x74, 0x61, 0x00, 0xFF])
        let add: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: dataAccount,
            kSecAttrGeneric as String: Data([1, 2, 3]),
        ]
        assertStatus(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        let text = attributesOf(genp(service, "text"))
        XCTAssertEqual(text?[kSecAttrGeneric as String] as? String, "generic text")
        XCTAssertEqual(text?[kSecAttrAccount as String] as? String, "text")
        let data = attributesOf(genp(service).merging([kSecAttrAccount as String: dataAccount]) { $1 })
        XCTAssertEqual(data?[kSecAttrAccount as String] as? Data, dataAccount)
        XCTAssertFalse(data?[kSecAttrAccount as String] is String, "Data given, Data returned")
        XCTAssertEqual(data?[kSecAttrGeneric as String] as? Data, Data([1, 2, 3]))
        // The secret always comes back as Data (empty for an item added without one).
        XCTAssertEqual(dataOf(genp(service, "text")).data, Data())
    }

    func testOptionalsInsideDictionariesAreUnwrapped() {
        let service = unique()
        let account: String? = "optional-account"
        let secret: Data? = Data("optional-secret".utf8)
        let label: String?? = "double optional"
        let add: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account as Any,
            kSecAttrLabel as String: label as Any,
            kSecValueData as String: secret as Any,
        ]
        assertStatus(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        let attrs = attributesOf(genp(service, "optional-account"))
        XCTAssertEqual(attrs?[kSecAttrAccount as String] as? String, "optional-account")
        XCTAssertEqual(attrs?[kSecAttrLabel as String] as? String, "double optional")
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                    kSecAttrAccount as String: account as Any, kSecReturnData as String: true]
        let (status, result) = copyMatching(query)
        assertStatus(status, errSecSuccess)
        XCTAssertEqual(result as? Data, secret)
    }

    /// A nil optional put into `[String: Any]` becomes NSNull when the dictionary is bridged (as
    /// on Apple's platforms), and NSNull is not a keychain value. Assigning nil through the
    /// subscript removes the key instead.
    func testNilOptionalIsParamButNilAssignmentRemovesTheKey() {
        let service = unique()
        let account: String? = nil
        let add: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                  kSecAttrAccount as String: account as Any]
        assertStatus(SecItemAdd(add as CFDictionary, nil), errSecParam)
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]
        query[kSecAttrAccount as String] = account
        assertStatus(SecItemAdd(query as CFDictionary, nil), errSecSuccess)
    }

    func testCFStringKeyedAndStringKeyedDictionariesAreTheSame() {
        let service = unique()
        let cfAdd: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrService: service,
            kSecAttrAccount: "cf",
            kSecValueData: Data("cf-secret".utf8),
        ]
        assertStatus(SecItemAdd(cfAdd as CFDictionary, nil), errSecSuccess)
        let stringQuery: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: "cf",
            kSecReturnData as String: true,
        ]
        var result: CFTypeRef?
        assertStatus(SecItemCopyMatching(stringQuery as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(result as? Data, Data("cf-secret".utf8))
        let cfQuery: [CFString: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrService: service,
                                        kSecReturnAttributes: true]
        var attrs: CFTypeRef?
        assertStatus(SecItemCopyMatching(cfQuery as CFDictionary, &attrs), errSecSuccess)
        XCTAssertEqual((attrs as? [String: Any])?[kSecAttrAccount as String] as? String, "cf")
        // withUnsafeMutablePointer, as some wrappers write it.
        var object: AnyObject?
        let status = withUnsafeMutablePointer(to: &object) {
            SecItemCopyMatching(stringQuery as CFDictionary, UnsafeMutablePointer($0))
        }
        assertStatus(status, errSecSuccess)
        XCTAssertEqual(object as? Data, Data("cf-secret".utf8))
    }

    func testBooleanTrueWithAndWithoutExclamationMark() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("x".utf8)), errSecSuccess)
        let bang: [String: Any] = genp(service).merging([kSecReturnData as String: kCFBooleanTrue!]) { $1 }
        XCTAssertEqual(copyMatching(bang).result as? Data, Data("x".utf8), "kCFBooleanTrue!")
        let bare: [CFString: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrService: service,
                                     kSecReturnData: kCFBooleanTrue as Any]
        var result: CFTypeRef?
        assertStatus(SecItemCopyMatching(bare as CFDictionary, &result), errSecSuccess, "kCFBooleanTrue")
        XCTAssertEqual(result as? Data, Data("x".utf8), "kCFBooleanTrue")
        // kCFBooleanFalse asks for nothing.
        let off = genp(service).merging([kSecReturnData as String: kCFBooleanFalse!]) { $1 }
        let (status, none) = copyMatching(off)
        assertStatus(status, errSecSuccess)
        XCTAssertNil(none)
    }
}
