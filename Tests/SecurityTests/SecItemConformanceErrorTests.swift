import Foundation
import KeychainTestSupport
import Security
import XCTest

/// PRODUCT 2 and 3: errSecNoSuchClass, errSecNoSuchAttr, errSecParam, access control, and the
/// documented differences (r_Ref, presence-gated items, the kSecUse keys).
final class SecItemConformanceErrorTests: SecItemConformanceCase {
    // MARK: Classes and attributes

    func testUnknownClassIsNoSuchClass() {
        let query: [String: Any] = [kSecClass as String: "nope", kSecAttrService as String: unique(),
                                    kSecValueData as String: Data("x".utf8)]
        assertStatus(SecItemAdd(query as CFDictionary, nil), errSecNoSuchClass, "add")
        var result: CFTypeRef?
        let search: [String: Any] = [kSecClass as String: "nope", kSecReturnData as String: true]
        assertStatus(SecItemCopyMatching(search as CFDictionary, &result), errSecNoSuchClass, "search")
        XCTAssertNil(result)
        let q: [String: Any] = [kSecClass as String: "nope"]
        assertStatus(SecItemUpdate(q as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary), errSecNoSuchClass, "update")
        assertStatus(SecItemDelete(q as CFDictionary), errSecNoSuchClass, "delete")
    }

    func testMissingClassIsParam() {
        let add: [String: Any] = [kSecAttrService as String: unique(), kSecValueData as String: Data("x".utf8)]
        assertStatus(SecItemAdd(add as CFDictionary, nil), errSecParam, "add")
        let search: [String: Any] = [kSecAttrService as String: "x"]
        assertStatus(SecItemCopyMatching(search as CFDictionary, nil), errSecParam, "search")
        assertStatus(SecItemDelete(search as CFDictionary), errSecParam, "delete")
    }

    func testAttributeOfAnotherClassIsNoSuchAttr() {
        let service = unique()
        // kSecAttrServer belongs to internet passwords, kSecAttrAccount to passwords only.
        assertStatus(addPassword(service: service, account: "a", [kSecAttrServer as String: "example.com"]), errSecNoSuchAttr, "add genp+srvr")
        XCTAssertEqual(count(genp(service)), 0, "nothing added")
        assertStatus(addPassword(service: service, account: "a"), errSecSuccess)
        let search = genp(service).merging([kSecAttrServer as String: "example.com"]) { $1 }
        assertStatus(SecItemCopyMatching(search as CFDictionary, nil), errSecNoSuchAttr, "search genp+srvr")
        assertStatus(SecItemDelete(search as CFDictionary), errSecNoSuchAttr, "delete genp+srvr")
        let cert: [String: Any] = [kSecClass as String: kSecClassCertificate, kSecAttrAccount as String: "a",
                                   kSecAttrSerialNumber as String: Data([1])]
        assertStatus(SecItemAdd(cert as CFDictionary, nil), errSecNoSuchAttr, "add cert+acct")
        let key: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrService as String: service]
        assertStatus(SecItemAdd(key as CFDictionary, nil), errSecNoSuchAttr, "add keys+svce")
    }

    // MARK: Access control

    func accessControl(_ protection: CFString, _ flags: SecAccessControlCreateFlags,
                       file: StaticString = #filePath, line: UInt = #line) -> SecAccessControl? {
        var error: Unmanaged<CFError>?
        let control = SecAccessControlCreateWithFlags(kCFAllocatorDefault, protection, flags, &error)
        XCTAssertNotNil(control, "SecAccessControlCreateWithFlags: \(String(describing: error))", file: file, line: line)
        return control
    }

    func testAccessControlWithMismatchedAccessibleIsParam() throws {
        let control = try XCTUnwrap(accessControl(kSecAttrAccessibleAfterFirstUnlock, .userPresence))
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("x".utf8), [
            kSecAttrAccessControl as String: control,
            kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked,
        ]), errSecParam, "ck access control with pdmn ak")
        XCTAssertEqual(count(genp(service)), 0)
        // The same protection on both is fine, and the item takes it.
        assertStatus(addPassword(service: service, account: "a", data: Data("x".utf8), [
            kSecAttrAccessControl as String: control,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
        ]), errSecSuccess, "matching protection")
        XCTAssertEqual(attributesOf(genp(service))?[kSecAttrAccessible as String] as? String, "ck")
    }

    func testAccessControlAloneSetsTheProtection() throws {
        let control = try XCTUnwrap(accessControl(kSecAttrAccessibleAlwaysThisDeviceOnly, []))
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("x".utf8),
                                 [kSecAttrAccessControl as String: control]), errSecSuccess)
        let attrs = attributesOf(genp(service))
        XCTAssertEqual(attrs?[kSecAttrAccessible as String] as? String, "dku")
        XCTAssertEqual(attrs?[kSecAttrAccessControl as String] as? SecAccessControl, control)
        // Without a presence flag, the secret reads as usual.
        XCTAssertEqual(dataOf(genp(service)).data, Data("x".utf8))
    }

    func testAccessControlWithAnInvalidProtectionFails() {
        var error: Unmanaged<CFError>?
        let control = SecAccessControlCreateWithFlags(kCFAllocatorDefault, "not-a-class" as CFString, .userPresence, &error)
        XCTAssertNil(control)
        guard let e = error?.takeRetainedValue() else { return XCTFail("no error") }
        XCTAssertEqual(CFErrorGetCode(e), Int(errSecParam))
        XCTAssertEqual(CFErrorGetDomain(e) as String, "NSOSStatusErrorDomain")
    }

    /// With no approval program configured (this vault has none), a secret behind a presence
    /// flag is errSecInteractionNotAllowed, as on a device that cannot show a prompt; its
    /// attributes stay readable.
    func testPresenceGatedSecretsAreInteractionNotAllowed() throws {
        let cases: [(String, SecAccessControlCreateFlags)] = [
            ("userPresence", .userPresence), ("biometryAny", .biometryAny), ("biometryCurrentSet", .biometryCurrentSet),
            ("devicePasscode", .devicePasscode), ("watch", .watch), ("biometryOrPasscode", [.biometryAny, .or, .devicePasscode]),
        ]
        for (name, flags) in cases {
            let control = try XCTUnwrap(accessControl(kSecAttrAccessibleAfterFirstUnlock, flags))
            let service = unique(name)
            assertStatus(addPassword(service: service, account: "a", data: Data("gated".utf8),
                                     [kSecAttrAccessControl as String: control]), errSecSuccess, "\(name): add")
            var result: CFTypeRef?
            let query = genp(service).merging([kSecReturnData as String: true,
                                               kSecUseOperationPrompt as String: "Authenticate"]) { $1 }
            assertStatus(SecItemCopyMatching(query as CFDictionary, &result), errSecInteractionNotAllowed, "\(name): read")
            XCTAssertNil(result)
            let attrs = attributesOf(genp(service))
            XCTAssertEqual(attrs?[kSecAttrAccessControl as String] as? SecAccessControl, control, name)
        }
    }

    func testPresenceGatedItemCanBeDeletedButNotChangedWithoutApproval() throws {
        let control = try XCTUnwrap(accessControl(kSecAttrAccessibleAfterFirstUnlock, .userPresence))
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("gated".utf8),
                                 [kSecAttrAccessControl as String: control]), errSecSuccess)
        // Rewriting the item needs its secret, which needs presence.
        assertStatus(SecItemUpdate(genp(service) as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary),
                     errSecInteractionNotAllowed, "update")
        // A new secret replaces the old one without reading it.
        assertStatus(SecItemUpdate(genp(service) as CFDictionary, [kSecValueData as String: Data("new".utf8)] as CFDictionary),
                     errSecSuccess, "update of the secret")
        assertStatus(SecItemDelete(genp(service) as CFDictionary), errSecSuccess, "delete")
        XCTAssertEqual(count(genp(service)), 0)
    }

    /// PRODUCT 2: an access control carries the protection, and the two may not disagree. After
    /// kSecAttrAccessible changes on an item with an access control, the access control follows
    /// with its flags; a kSecAttrAccessible beside an access control of another class is refused.
    func testChangingTheProtectionOfAnItemWithAccessControlKeepsThemConsistent() throws {
        let control = try XCTUnwrap(accessControl(kSecAttrAccessibleAlwaysThisDeviceOnly, .privateKeyUsage))
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("x".utf8),
                                 [kSecAttrAccessControl as String: control]), errSecSuccess)
        assertStatus(SecItemUpdate(genp(service) as CFDictionary,
                                   [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked] as CFDictionary),
                     errSecSuccess)
        let attrs = attributesOf(genp(service))
        XCTAssertEqual(attrs?[kSecAttrAccessible as String] as? String, "ak")
        XCTAssertEqual(attrs?[kSecAttrAccessControl as String] as? SecAccessControl,
                       accessControl(kSecAttrAccessibleWhenUnlocked, .privateKeyUsage))
        XCTAssertEqual(dataOf(genp(service)).data, Data("x".utf8))
        let other = try XCTUnwrap(accessControl(kSecAttrAccessibleAfterFirstUnlock, []))
        assertStatus(SecItemUpdate(genp(service) as CFDictionary,
                                   [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked,
                                    kSecAttrAccessControl as String: other] as CFDictionary),
                     errSecParam, "two protections")
    }

    /// Apple: an item with .applicationPassword needs the application password (given through
    /// an LAContext, which Linux code cannot pass) before its secret is returned.
    func testApplicationPasswordItemIsNotReadableWithoutThePassword() throws {
        let control = try XCTUnwrap(accessControl(kSecAttrAccessibleAfterFirstUnlock, .applicationPassword))
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("app-secret".utf8),
                                 [kSecAttrAccessControl as String: control]), errSecSuccess)
        let (status, data) = dataOf(genp(service))
        assertStatus(status, errSecInteractionNotAllowed)
        XCTAssertNil(data)
    }

    // MARK: Documented differences

    func testReturnRefForPasswordsIsParamAndForCertificatesAndKeysNotFound() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a"), errSecSuccess)
        var result: CFTypeRef?
        let genpRef = genp(service).merging([kSecReturnRef as String: true]) { $1 }
        assertStatus(SecItemCopyMatching(genpRef as CFDictionary, &result), errSecParam, "r_Ref on genp")
        // Certificates and keys have object references (SecCertificateItemTests, SecKeyItemTests);
        // with nothing matching the answer is no match.
        let cert: [String: Any] = [kSecClass as String: kSecClassCertificate, kSecReturnRef as String: true,
                                   kSecAttrLabel as String: unique()]
        assertStatus(SecItemCopyMatching(cert as CFDictionary, &result), errSecItemNotFound, "r_Ref on cert")
        let key: [String: Any] = [kSecClass as String: kSecClassKey, kSecReturnRef as String: true]
        let none = key.merging([kSecAttrApplicationTag as String: Data(unique().utf8)]) { $1 }
        assertStatus(SecItemCopyMatching(none as CFDictionary, &result), errSecItemNotFound, "r_Ref on keys")
        XCTAssertNil(result)
    }

    /// kSecUseAuthenticationUI only matters for presence-gated items (see the approval tests);
    /// kSecUseOperationPrompt and kSecUseDataProtectionKeychain are accepted and ignored.
    func testUseKeysAreAccepted() {
        let service = unique()
        assertStatus(addPassword(service: service, account: "a", data: Data("x".utf8), [
            kSecUseDataProtectionKeychain as String: true,
            kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
        ]), errSecSuccess, "add")
        for ui in [kSecUseAuthenticationUIAllow, kSecUseAuthenticationUIFail, kSecUseAuthenticationUISkip] {
            let query = genp(service).merging([kSecUseAuthenticationUI as String: ui,
                                               kSecUseOperationPrompt as String: "Why",
                                               kSecUseDataProtectionKeychain as String: true]) { $1 }
            XCTAssertEqual(dataOf(query).data, Data("x".utf8), "\(ui)")
        }
    }
}
