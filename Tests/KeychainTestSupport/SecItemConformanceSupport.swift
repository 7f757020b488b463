import Foundation
import Security
import XCTest

// The SecItem conformance suite (PRODUCT 2 and 3, issue 4): Apple's documented behaviour, one test
// per rule, through the real daemon. Every class below gets its own vault and daemon
// (SecurityTestCase); every test works on items of its own service, so tests do not see each
// other's items. Helpers only: the rules are in the SecItemConformance*Tests files.

open class SecItemConformanceCase: SecurityTestCase {
    /// A service (or other name) that no other test uses.
    package func unique(_ tag: String = #function) -> String {
        tag.replacingOccurrences(of: "()", with: "") + "-" + UUID().uuidString.prefix(8)
    }

    /// SecItemAdd of a generic password with `extra` attributes.
    @discardableResult
    package func addPassword(service: String, account: String, data: Data? = nil, _ extra: [String: Any] = [:]) -> OSStatus {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        if let data { query[kSecValueData as String] = data }
        for (k, v) in extra { query[k] = v }
        return SecItemAdd(query as CFDictionary, nil)
    }

    /// SecItemCopyMatching with a result pointer.
    package func copyMatching(_ query: [String: Any]) -> (status: OSStatus, result: AnyObject?) {
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, result)
    }

    /// The attributes of the one item `query` finds (ReturnAttributes, MatchLimitOne), or nil.
    package func attributesOf(_ query: [String: Any], file: StaticString = #filePath, line: UInt = #line) -> [String: Any]? {
        var q = query
        q[kSecReturnAttributes as String] = true
        q[kSecMatchLimit as String] = kSecMatchLimitOne
        let (status, result) = copyMatching(q)
        guard status == errSecSuccess else {
            XCTFail("SecItemCopyMatching: \(describe(status))", file: file, line: line)
            return nil
        }
        guard let dict = result as? [String: Any] else {
            XCTFail("not a dictionary: \(shape(result))", file: file, line: line)
            return nil
        }
        return dict
    }

    /// The secret of the one item `query` finds, or nil with the status.
    package func dataOf(_ query: [String: Any]) -> (status: OSStatus, data: Data?) {
        var q = query
        q[kSecReturnData as String] = true
        let (status, result) = copyMatching(q)
        return (status, result as? Data)
    }

    /// How many items `query` finds (0 for errSecItemNotFound; -1 for any other failure).
    package func count(_ query: [String: Any]) -> Int {
        var q = query
        q[kSecReturnPersistentRef as String] = true
        q[kSecMatchLimit as String] = kSecMatchLimitAll
        let (status, result) = copyMatching(q)
        if status == errSecItemNotFound { return 0 }
        guard status == errSecSuccess, let array = result as? [Any] else { return -1 }
        return array.count
    }

    /// A generic-password query for `service` (and `account`).
    package func genp(_ service: String, _ account: String? = nil) -> [String: Any] {
        var q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]
        if let account { q[kSecAttrAccount as String] = account }
        return q
    }

    /// "-25300 (The specified item could not be found in the keychain.)"
    package func describe(_ status: OSStatus) -> String {
        "\(status) (\(SecCopyErrorMessageString(status, nil).map { String($0) } ?? "no message"))"
    }

    package func assertStatus(_ status: OSStatus, _ expected: OSStatus, _ what: String = "",
                      file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(status, expected, "\(what): got \(describe(status)), expected \(describe(expected))",
                       file: file, line: line)
    }

    /// What kind of object a result is, for failure messages.
    package func shape(_ object: Any?) -> String {
        guard let object else { return "nil" }
        if let d = object as? Data { return "Data(\(d.count) bytes)" }
        if let d = object as? [String: Any] { return "dictionary(\(d.keys.sorted()))" }
        if let a = object as? [Any] { return "array(\(a.map { shape($0) }))" }
        return "\(type(of: object))"
    }
}
