import Foundation
import KeychainTestSupport
import Security
import XCTest

/// Certificates in the keychain (`kSecClassCertificate`) with the attributes Apple derives from
/// the DER, and identities (`kSecClassIdentity`): a certificate item joined with the private key
/// whose `klbl` is its `pkhh`. Through the real daemon; certificates made by `openssl req -x509`.
final class SecCertificateItemTests: SecItemConformanceCase {
    var dir: URL!

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("kcfs-certitem-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: dir)
    }

    func certQuery(_ label: String) -> [String: Any] { [kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: label] }

    func testAddingACertificateRefStoresApplesDerivedAttributes() throws {
        let name = unique()
        let tls = try TLSMaterial(in: dir, commonName: name, serial: "0x8badf00d")
        let cert = try tls.certificate()
        assertStatus(SecItemAdd([kSecValueRef as String: cert] as CFDictionary, nil), errSecSuccess, "add")
        let attrs = try XCTUnwrap(attributesOf(certQuery(name)))
        XCTAssertEqual(attrs[kSecAttrCertificateType as String] as? Int, 3, "CSSM_CERT_X_509v3")
        XCTAssertEqual(attrs[kSecAttrCertificateEncoding as String] as? Int, 3, "CSSM_CERT_ENCODING_DER")
        XCTAssertEqual(attrs[kSecAttrLabel as String] as? String, name, "the subject summary")
        XCTAssertEqual(attrs[kSecAttrSerialNumber as String] as? Data, Data([0x00, 0x8b, 0xad, 0xf0, 0x0d]))
        let subject = try XCTUnwrap(attrs[kSecAttrSubject as String] as? Data)
        XCTAssertEqual(attrs[kSecAttrIssuer as String] as? Data, subject, "self-signed")
        XCTAssertNotNil(tls.certificateDER.range(of: subject), "the name's DER as the certificate holds it")
        XCTAssertEqual(subject.first, 0x30)
        XCTAssertEqual((attrs[kSecAttrSubjectKeyID as String] as? Data)?.count, 20, "openssl's SHA-1 key identifier")
        // pkhh is the key's application label: the value an identity joins on.
        var error: Unmanaged<CFError>?
        let keyAttrs = try XCTUnwrap(SecKeyCopyAttributes(try tls.privateKey()) as? [String: Any])
        let klbl = try XCTUnwrap(keyAttrs[kSecAttrApplicationLabel as String] as? Data)
        XCTAssertEqual(attrs[kSecAttrPublicKeyHash as String] as? Data, klbl)
        XCTAssertNotNil(SecCertificateCopyKey(cert).flatMap { SecKeyCopyExternalRepresentation($0, &error) })
    }

    func testCertificateRefComesBackAndADuplicateIsRefused() throws {
        let name = unique()
        let tls = try TLSMaterial(in: dir, commonName: name)
        let cert = try tls.certificate()
        var added: CFTypeRef?
        assertStatus(SecItemAdd([kSecValueRef as String: cert, kSecReturnRef as String: true] as CFDictionary, &added), errSecSuccess, "add")
        XCTAssertEqual(added as? SecCertificate, cert)
        assertStatus(SecItemAdd([kSecValueRef as String: cert] as CFDictionary, nil), errSecDuplicateItem, "same certificate by ref")
        assertStatus(SecItemAdd([kSecClass as String: kSecClassCertificate, kSecValueData as String: tls.certificateDER,
                                 kSecAttrLabel as String: "another label"] as CFDictionary, nil),
                     errSecDuplicateItem, "same issuer and serial by data, whatever the label")
        let one = copyMatching(certQuery(name).merging([kSecReturnRef as String: true]) { $1 })
        assertStatus(one.status, errSecSuccess, "r_Ref")
        let found = try XCTUnwrap(one.result as? SecCertificate, shape(one.result))
        XCTAssertEqual(SecCertificateCopyData(found) as Data, tls.certificateDER)
        XCTAssertEqual(SecCertificateCopySubjectSummary(found) as String?, name)
        let all = copyMatching(certQuery(name).merging([kSecReturnRef as String: true, kSecReturnAttributes as String: true,
                                                        kSecMatchLimit as String: kSecMatchLimitAll]) { $1 })
        let dicts = try XCTUnwrap(all.result as? [[String: Any]], shape(all.result))
        XCTAssertEqual(dicts.count, 1)
        XCTAssertEqual(dicts.first?[kSecValueRef as String] as? SecCertificate, cert)
        XCTAssertNil(dicts.first?[kSecValueData as String], "no data unless asked")
        XCTAssertEqual(dicts.first?[kSecAttrLabel as String] as? String, name)
        XCTAssertEqual(dataOf(certQuery(name)).data, tls.certificateDER, "r_Data is the DER")
        assertStatus(SecItemDelete(certQuery(name) as CFDictionary), errSecSuccess, "delete")
        assertStatus(copyMatching(certQuery(name).merging([kSecReturnRef as String: true]) { $1 }).status, errSecItemNotFound, "gone")
    }

    func testDataThatIsNotDERIsStoredAsGivenAndARefMustBeACertificateItem() throws {
        // As Apple's securityd: only a certificate object's attributes are derived.
        let tls = try TLSMaterial(in: dir, commonName: "not-der.example")
        let label = unique()
        assertStatus(SecItemAdd([kSecClass as String: kSecClassCertificate, kSecValueData as String: tls.certificatePEM,
                                 kSecAttrLabel as String: label, kSecAttrSerialNumber as String: Data([5])] as CFDictionary, nil),
                     errSecSuccess, "PEM text as data")
        let attrs = try XCTUnwrap(attributesOf(certQuery(label)))
        XCTAssertEqual(attrs[kSecAttrSerialNumber as String] as? Data, Data([5]), "the caller's attributes")
        XCTAssertNil(attrs[kSecAttrPublicKeyHash as String], "nothing derived")
        assertStatus(copyMatching(certQuery(label).merging([kSecReturnRef as String: true]) { $1 }).status, errSecDecode,
                     "no SecCertificate from data that is not one")
        assertStatus(SecItemAdd([kSecValueRef as String: try tls.certificate(), kSecClass as String: kSecClassKey] as CFDictionary, nil),
                     errSecParam, "a certificate is not a key")
    }

    // MARK: Identities

    /// Stores the material's private key (labelled `label`) and certificate.
    func storeIdentity(_ tls: TLSMaterial, label: String, storeKey: Bool = true) throws {
        if storeKey {
            assertStatus(SecItemAdd([kSecClass as String: kSecClassKey, kSecValueRef as String: try tls.privateKey(),
                                     kSecAttrLabel as String: label] as CFDictionary, nil), errSecSuccess, "key")
        }
        assertStatus(SecItemAdd([kSecValueRef as String: try tls.certificate()] as CFDictionary, nil), errSecSuccess, "certificate")
    }

    func testIdentityJoinsTheCertificateWithItsPrivateKey() throws {
        let name = unique()
        let tls = try TLSMaterial(in: dir, commonName: name)
        try storeIdentity(tls, label: name)
        let query: [String: Any] = [kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: name, kSecReturnRef as String: true]
        let r = copyMatching(query)
        assertStatus(r.status, errSecSuccess, "identity")
        let identity = try XCTUnwrap(r.result as? SecIdentity, shape(r.result))
        var cert: SecCertificate?
        XCTAssertEqual(SecIdentityCopyCertificate(identity, &cert), errSecSuccess)
        XCTAssertEqual(cert.map { SecCertificateCopyData($0) as Data }, tls.certificateDER)
        var key: SecKey?
        XCTAssertEqual(SecIdentityCopyPrivateKey(identity, &key), errSecSuccess)
        // The key signs (in the daemon) and the certificate's public key verifies.
        var error: Unmanaged<CFError>?
        let message = Data("identity".utf8)
        let signature = try XCTUnwrap(SecKeyCreateSignature(try XCTUnwrap(key), .ecdsaSignatureMessageX962SHA256, message as CFData, &error))
        let pub = try XCTUnwrap(SecCertificateCopyKey(try XCTUnwrap(cert)))
        XCTAssertTrue(SecKeyVerifySignature(pub, .ecdsaSignatureMessageX962SHA256, message as CFData, signature, &error))

        let all = copyMatching([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: name, kSecReturnRef as String: true,
                                kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll])
        let dicts = try XCTUnwrap(all.result as? [[String: Any]], shape(all.result))
        XCTAssertEqual(dicts.count, 1)
        XCTAssertEqual(dicts.first?[kSecClass as String] as? String, kSecClassIdentity as String)
        XCTAssertEqual(dicts.first?[kSecAttrLabel as String] as? String, name, "the certificate's attributes")
        XCTAssertNotNil(dicts.first?[kSecValueRef as String] as? SecIdentity)

        var made: SecIdentity?
        XCTAssertEqual(SecIdentityCreateWithCertificate(nil, try tls.certificate(), &made), errSecSuccess)
        XCTAssertEqual(made, identity)
    }

    func testACertificateWithoutAVisiblePrivateKeyIsNoIdentity() throws {
        let name = unique()
        let tls = try TLSMaterial(in: dir, commonName: name)
        try storeIdentity(tls, label: name, storeKey: false)
        let query: [String: Any] = [kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: name, kSecReturnRef as String: true]
        assertStatus(copyMatching(query).status, errSecItemNotFound, "certificate alone")
        var made: SecIdentity?
        XCTAssertEqual(SecIdentityCreateWithCertificate(nil, try tls.certificate(), &made), errSecItemNotFound)
        // With the key, the identity exists; with the key deleted, it is gone again.
        assertStatus(SecItemAdd([kSecClass as String: kSecClassKey, kSecValueRef as String: try tls.privateKey()] as CFDictionary, nil),
                     errSecSuccess, "key")
        assertStatus(copyMatching(query).status, errSecSuccess, "with the key")
        let klbl = try XCTUnwrap((SecKeyCopyAttributes(try tls.privateKey()) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
        assertStatus(SecItemDelete([kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: klbl] as CFDictionary),
                     errSecSuccess, "delete key")
        assertStatus(copyMatching(query).status, errSecItemNotFound, "key deleted")
    }
}
