import Foundation
import KeychainTestSupport
import Security
import XCTest

/// `SecItemAdd`, `SecItemUpdate` and `SecItemDelete` of identities, as Apple's `explode_identity`
/// and `handleUpdateIdentity` (`SecItem.c`, `SecItem.m`) do them: an identity is its certificate
/// item and its private key item. Through the real
/// daemon; keys and certificates made by `openssl req -x509`.
final class SecIdentityItemTests: SecItemConformanceCase {
    var dir: URL!

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("kcfs-identity-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: dir)
    }

    /// Stores the key and the certificate, and returns the identity the keychain gives for them.
    func storeIdentity(_ tls: TLSMaterial, label: String) throws -> SecIdentity {
        assertStatus(SecItemAdd([kSecClass as String: kSecClassKey, kSecValueRef as String: try tls.privateKey(),
                                 kSecAttrLabel as String: label] as CFDictionary, nil), errSecSuccess, "key")
        assertStatus(SecItemAdd([kSecValueRef as String: try tls.certificate(), kSecAttrLabel as String: label] as CFDictionary, nil),
                     errSecSuccess, "certificate")
        return try identity(label)
    }

    func identity(_ label: String, file: StaticString = #filePath, line: UInt = #line) throws -> SecIdentity {
        let r = copyMatching([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: label, kSecReturnRef as String: true])
        assertStatus(r.status, errSecSuccess, "identity \(label)", file: file, line: line)
        return try XCTUnwrap(r.result as? SecIdentity, shape(r.result), file: file, line: line)
    }

    func identityStatus(_ label: String) -> OSStatus {
        SecItemCopyMatching([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: label] as CFDictionary, nil)
    }

    func certificateCount(_ label: String) -> Int { count([kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: label]) }

    func keyCount(_ tls: TLSMaterial) throws -> Int {
        let klbl = try XCTUnwrap((SecKeyCopyAttributes(try tls.privateKey()) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
        return count([kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: klbl])
    }

    func testDeletingAnIdentityRefDeletesItsCertificateAndItsKey() throws {
        let name = unique()
        let tls = try TLSMaterial(in: dir, commonName: name)
        let identity = try storeIdentity(tls, label: name)
        XCTAssertEqual(certificateCount(name), 1)
        XCTAssertEqual(try keyCount(tls), 1)
        assertStatus(SecItemDelete([kSecValueRef as String: identity] as CFDictionary), errSecSuccess, "delete the identity")
        XCTAssertEqual(certificateCount(name), 0, "the certificate is gone")
        XCTAssertEqual(try keyCount(tls), 0, "the private key is gone")
        assertStatus(identityStatus(name), errSecItemNotFound, "no identity")
        assertStatus(SecItemDelete([kSecValueRef as String: identity] as CFDictionary), errSecItemNotFound, "nothing left")
    }

    func testDeletingByClassDeletesTheIdentitiesFoundAndNothingElse() throws {
        let a = unique("a"), b = unique("b")
        let tlsA = try TLSMaterial(in: dir, commonName: a, serial: "0x0a01"), tlsB = try TLSMaterial(in: dir, commonName: b, serial: "0x0b01")
        _ = try storeIdentity(tlsA, label: a)
        _ = try storeIdentity(tlsB, label: b)
        // A key labelled `a` that no certificate names is not part of any identity.
        let lone = try TLSMaterial(in: dir, commonName: "lone-" + a, serial: "0x0c01")
        assertStatus(SecItemAdd([kSecClass as String: kSecClassKey, kSecValueRef as String: try lone.privateKey(),
                                 kSecAttrLabel as String: a] as CFDictionary, nil), errSecSuccess, "lone key")
        assertStatus(SecItemDelete([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: a] as CFDictionary),
                     errSecSuccess, "delete identities labelled a")
        XCTAssertEqual(certificateCount(a), 0)
        XCTAssertEqual(try keyCount(tlsA), 0)
        XCTAssertEqual(try keyCount(lone), 1, "a key without a certificate is no identity and stays")
        assertStatus(identityStatus(b), errSecSuccess, "the other identity stays")
        XCTAssertEqual(try keyCount(tlsB), 1)
        assertStatus(SecItemDelete([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: a] as CFDictionary),
                     errSecItemNotFound, "none left")
    }

    func testAKeyThatAnotherCertificateNamesIsKept() throws {
        let name = unique()
        let tls = try TLSMaterial(in: dir, commonName: name, serial: "0x1001")
        let first = try storeIdentity(tls, label: name)
        // A second certificate for the same key.
        let otherDER = dir.appendingPathComponent("other.der")
        try TLSMaterial.openssl(["req", "-x509", "-key", tls.keyPEM.path, "-outform", "DER", "-out", otherDER.path,
                                 "-subj", "/CN=other-\(name)", "-days", "2", "-set_serial", "0x2002"])
        let other = try XCTUnwrap(SecCertificateCreateWithData(nil, try Data(contentsOf: otherDER) as CFData))
        assertStatus(SecItemAdd([kSecValueRef as String: other, kSecAttrLabel as String: "other-" + name] as CFDictionary, nil),
                     errSecSuccess, "second certificate")
        assertStatus(SecItemDelete([kSecValueRef as String: first] as CFDictionary), errSecSuccess, "delete the first identity")
        XCTAssertEqual(certificateCount(name), 0)
        XCTAssertEqual(try keyCount(tls), 1, "the key still has a certificate")
        assertStatus(identityStatus("other-" + name), errSecSuccess, "the second identity")
    }

    func testAddingAnIdentityAddsWhatIsMissing() throws {
        let name = unique()
        let tls = try TLSMaterial(in: dir, commonName: name)
        let identity = try storeIdentity(tls, label: name)
        assertStatus(SecItemAdd([kSecValueRef as String: identity] as CFDictionary, nil), errSecDuplicateItem, "both already there")
        assertStatus(SecItemDelete([kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: name] as CFDictionary),
                     errSecSuccess, "delete only the certificate")
        assertStatus(identityStatus(name), errSecItemNotFound)
        assertStatus(SecItemAdd([kSecValueRef as String: identity, kSecReturnRef as String: true] as CFDictionary, nil),
                     errSecParam, "a return key needs a result pointer")
        XCTAssertEqual(certificateCount(name), 0, "nothing was added by the refused call")
        var added: CFTypeRef?
        assertStatus(SecItemAdd([kSecValueRef as String: identity, kSecAttrLabel as String: name, kSecReturnRef as String: true] as CFDictionary,
                                &added), errSecSuccess, "the certificate comes back; its key is already there")
        XCTAssertEqual(added as? SecIdentity, identity)
        XCTAssertEqual(certificateCount(name), 1)
        XCTAssertEqual(try keyCount(tls), 1)
        XCTAssertEqual(try self.identity(name), identity)
    }
    func keyLabel(_ tls: TLSMaterial) throws -> String? {
        let klbl = try XCTUnwrap((SecKeyCopyAttributes(try tls.privateKey()) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
        return attributesOf([kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: klbl])?[kSecAttrLabel as String] as? String
    }

    func testUpdatingAnIdentityRefChangesItsCertificateAndItsKey() throws {
        let name = unique("upd")
        let tls = try TLSMaterial(in: dir, commonName: name, serial: "0x0d01")
        let identity = try storeIdentity(tls, label: name)
        assertStatus(SecItemUpdate([kSecValueRef as String: identity] as CFDictionary, [kSecAttrLabel as String: name + "-new"] as CFDictionary),
                     errSecSuccess, "update the identity")
        XCTAssertEqual(certificateCount(name), 0)
        XCTAssertEqual(certificateCount(name + "-new"), 1, "the certificate's label")
        XCTAssertEqual(try keyLabel(tls), name + "-new", "the private key's label")
        assertStatus(identityStatus(name + "-new"), errSecSuccess)
        // Its certificate gone: the first of the two changes fails, and nothing changes.
        assertStatus(SecItemDelete([kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: name + "-new"] as CFDictionary),
                     errSecSuccess, "delete the certificate")
        assertStatus(SecItemUpdate([kSecValueRef as String: identity] as CFDictionary, [kSecAttrLabel as String: name + "-again"] as CFDictionary),
                     errSecItemNotFound, "no certificate to change")
        XCTAssertEqual(try keyLabel(tls), name + "-new", "the key was not reached")
    }

    func testUpdatingByClassChangesTheCertificatesThenTheKeysTheQueryFinds() throws {
        let name = unique("upd")
        let tls = try TLSMaterial(in: dir, commonName: name, serial: "0x0e01")
        _ = try storeIdentity(tls, label: name)
        let query: [String: Any] = [kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: name]
        assertStatus(SecItemUpdate(query as CFDictionary, [kSecAttrLabel as String: name + "-new"] as CFDictionary), errSecSuccess, "update")
        XCTAssertEqual(certificateCount(name + "-new"), 1)
        XCTAssertEqual(try keyLabel(tls), name + "-new")
        assertStatus(SecItemUpdate(query as CFDictionary, [kSecAttrLabel as String: name + "-x"] as CFDictionary), errSecItemNotFound,
                     "nothing labelled so any more")
        // As Apple's: the same query for the certificates and then for the keys, so a key that
        // the query does not find ends it after the certificates changed.
        assertStatus(SecItemUpdate([kSecClass as String: kSecClassKey, kSecAttrLabel as String: name + "-new"] as CFDictionary,
                                   [kSecAttrLabel as String: name + "-key"] as CFDictionary), errSecSuccess, "relabel the key alone")
        assertStatus(SecItemUpdate([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: name + "-new"] as CFDictionary,
                                   [kSecAttrLabel as String: name + "-last"] as CFDictionary), errSecItemNotFound, "no key labelled so")
        XCTAssertEqual(certificateCount(name + "-last"), 1, "the certificate changed first")
        XCTAssertEqual(try keyLabel(tls), name + "-key")
    }
}
