import Foundation
import KeychainTestSupport
import Security
import XCTest

// Keychain code written the way iOS apps write it, compiled and run unchanged against the daemon.

enum KeychainError: Error, Equatable {
    case unhandled(OSStatus)
    case notFound
    case unexpectedData
}

/// A small secure store: save (update on duplicate), read, delete.
struct SecureStore {
    let service: String

    func save(_ value: String, for account: String) throws {
        let data = value.data(using: .utf8)!
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
            kSecValueData as String: data,
        ]
        let status = SecItemAdd(query as CFDictionary, nil)
        if status == errSecDuplicateItem {
            let search: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
            let update = SecItemUpdate(search as CFDictionary, [kSecValueData as String: data] as CFDictionary)
            guard update == errSecSuccess else { throw KeychainError.unhandled(update) }
        } else if status != errSecSuccess {
            throw KeychainError.unhandled(status)
        }
    }

    func read(_ account: String) throws -> String {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecMatchLimit as String: kSecMatchLimitOne,
            kSecReturnData as String: kCFBooleanTrue!,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        guard status != errSecItemNotFound else { throw KeychainError.notFound }
        guard status == errSecSuccess else { throw KeychainError.unhandled(status) }
        guard let data = item as? Data, let string = String(data: data, encoding: .utf8) else {
            throw KeychainError.unexpectedData
        }
        return string
    }

    func delete(_ account: String) throws {
        let query: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrService: service,
            kSecAttrAccount: account,
        ]
        let status = SecItemDelete(query as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError.unhandled(status) }
    }
}

/// A token store that deletes, then adds.
final class TokenStore {
    private let key = "com.example.token"

    func store(_ token: Data) -> Bool {
        let query = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrAccount: key,
        ] as CFDictionary
        SecItemDelete(query)
        let add = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrAccount: key,
            kSecValueData: token,
            kSecAttrAccessible: kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
        ] as CFDictionary
        return SecItemAdd(add, nil) == noErr
    }

    func load() -> Data? {
        var result: AnyObject?
        let status = withUnsafeMutablePointer(to: &result) {
            SecItemCopyMatching([
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrAccount as String: key,
                kSecReturnData as String: true,
            ] as CFDictionary, UnsafeMutablePointer($0))
        }
        return status == noErr ? result as? Data : nil
    }
}

final class SecItemWrapperTests: SecurityTestCase {
    func testSecureStoreSavesReadsUpdatesAndDeletes() throws {
        let store = SecureStore(service: "com.example.app")
        try store.save("first", for: "alice")
        XCTAssertEqual(try store.read("alice"), "first")
        try store.save("second", for: "alice")  // duplicate: updated
        XCTAssertEqual(try store.read("alice"), "second")
        try store.delete("alice")
        XCTAssertThrowsError(try store.read("alice")) { XCTAssertEqual($0 as? KeychainError, .notFound) }
    }

    func testTokenStoreDeletesThenAdds() {
        let tokens = TokenStore()
        XCTAssertTrue(tokens.store(Data([1, 2, 3])))
        XCTAssertTrue(tokens.store(Data([4, 5])))
        XCTAssertEqual(tokens.load(), Data([4, 5]))
    }

    func testBiometryBoundSave() {
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault,
                                                           kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
                                                           .biometryCurrentSet, &error) else {
            return XCTFail("no access control: \(String(describing: error))")
        }
        let add: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "bio",
            kSecAttrAccount as String: "user",
            kSecAttrAccessControl as String: access,
            kSecValueData as String: Data("bio-secret".utf8),
        ]
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        // No approval agent is configured: reading it is not allowed, as on a device without UI.
        var result: CFTypeRef?
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "bio",
            kSecReturnData as String: true,
            kSecUseOperationPrompt as String: "Authenticate to read",
        ]
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecInteractionNotAllowed)
        XCTAssertNil(result)
        // Its attributes are still readable, with the access control.
        let attrs: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "bio",
            kSecReturnAttributes as String: true,
        ]
        XCTAssertEqual(SecItemCopyMatching(attrs as CFDictionary, &result), errSecSuccess)
        let dict = result as? [String: Any]
        XCTAssertEqual(dict?[kSecAttrAccessible as String] as? String, "akpu")
        XCTAssertEqual(dict?[kSecAttrAccessControl as String] as? SecAccessControl, access)
    }

    func testSharedAccessGroupSave() {
        let add: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "shared",
            kSecAttrAccessGroup as String: "default",
            kSecValueData as String: Data("shared-secret".utf8),
        ]
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        var other = add
        other[kSecAttrAccessGroup as String] = "group.com.example.none"
        XCTAssertEqual(SecItemAdd(other as CFDictionary, nil), errSecMissingEntitlement)
    }

    func testErrorSentences() {
        XCTAssertEqual(SecCopyErrorMessageString(errSecItemNotFound, nil) as String?,
                       "The specified item could not be found in the keychain.")
        XCTAssertEqual(String(SecCopyErrorMessageString(errSecDuplicateItem, nil)!),
                       "The specified item already exists in the keychain.")
    }

    func testAPIItemsAndCLIItemsAreTheSameItems() throws {
        XCTAssertEqual(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrService: "both", kSecAttrAccount: "api",
                                   kSecValueData: Data("from-api".utf8)] as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "both", "-a", "api", "-w"]).stdout, "from-api\n")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "both", "-a", "cli", "-w", "-"], input: "from-cli").status, 0)
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecAttrService: "both",
                                            kSecAttrAccount: "cli", kSecReturnData: kCFBooleanTrue!] as CFDictionary, &result),
                       errSecSuccess)
        XCTAssertEqual(result as? Data, Data("from-cli".utf8))
    }
}
