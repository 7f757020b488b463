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
        // Apple's normalized content of the Name: its RDN SETs, without the SEQUENCE around them
        // (openssl writes these values as UTF8String, which normalizing leaves as they are).
        XCTAssertNotNil(tls.certificateDER.range(of: subject), "the name's content as the certificate holds it")
        XCTAssertEqual(subject.first, 0x31, "an RDN SET first, no SEQUENCE tag")
        XCTAssertEqual(SecCertificateCopyNormalizedSubjectSequence(cert) as Data?, Data([0x30, UInt8(subject.count)]) + subject)
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

    /// DER for the tests' names: `tag`, a short length, `content`.
    func tlv(_ tag: UInt8, _ content: Data) -> Data { Data([tag, UInt8(content.count)]) + content }
    func attribute(_ oid: [UInt8], _ tag: UInt8, _ value: String) -> Data {
        tlv(0x31, tlv(0x30, tlv(0x06, Data(oid)) + tlv(tag, Data(value.utf8))))
    }
    let organization: [UInt8] = [0x55, 0x04, 0x0a], unit: [UInt8] = [0x55, 0x04, 0x0b], commonName: [UInt8] = [0x55, 0x04, 0x03]
    let email: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01]

    func testIssuerAndSubjectAreApplesNormalizedNames() throws {
        // PrintableString values (openssl's string_mask default) are upper-cased with their
        // blanks folded; the unit, a T61String (a tab is not printable), and the e-mail address,
        // an IA5String, stay as written.
        let config = dir.appendingPathComponent("printable.cnf")
        try "[req]\ndistinguished_name = dn\nstring_mask = default\nprompt = no\n[dn]\nCN = x\n".write(to: config, atomically: true, encoding: .utf8)
        let key = dir.appendingPathComponent("printable-key.pem"), der = dir.appendingPathComponent("printable.der")
        try TLSMaterial.openssl(["req", "-x509", "-config", config.path, "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                 "-keyout", key.path, "-outform", "DER", "-out", der.path, "-days", "2", "-set_serial", "0x2002",
                                 "-subj", "/O=acme  widgets   ltd/OU=dev\tops/CN=Host one/emailAddress=Ops@Example.com"])
        let certificateDER = try Data(contentsOf: der)
        let cert = try XCTUnwrap(SecCertificateCreateWithData(nil, certificateDER as CFData))
        let written = attribute(organization, 0x13, "acme  widgets   ltd") + attribute(unit, 0x14, "dev\tops") + attribute(commonName, 0x13, "Host one")
            + attribute(email, 0x16, "Ops@Example.com")
        XCTAssertNotNil(certificateDER.range(of: tlv(0x30, written)), "openssl wrote the name as the test expects")
        let normalized = attribute(organization, 0x13, "ACME WIDGETS LTD") + attribute(unit, 0x14, "dev\tops") + attribute(commonName, 0x13, "HOST ONE")
            + attribute(email, 0x16, "Ops@Example.com")
        XCTAssertEqual(SecCertificateCopyNormalizedSubjectSequence(cert) as Data?, tlv(0x30, normalized))
        XCTAssertEqual(SecCertificateCopyNormalizedIssuerSequence(cert) as Data?, tlv(0x30, normalized))

        let label = unique()
        assertStatus(SecItemAdd([kSecValueRef as String: cert, kSecAttrLabel as String: label] as CFDictionary, nil), errSecSuccess, "add")
        let attrs = try XCTUnwrap(attributesOf(certQuery(label)))
        XCTAssertEqual(attrs[kSecAttrSubject as String] as? Data, normalized)
        XCTAssertEqual(attrs[kSecAttrIssuer as String] as? Data, normalized)
        // An issuer given as the certificate's own DER Name is normalized before it is compared,
        // as Apple's SecItemAttributesPrepare does; the normalized content matches as it is.
        for issuer in [tlv(0x30, written), normalized, tlv(0x30, normalized)] {
            let found = copyMatching([kSecClass as String: kSecClassCertificate, kSecAttrIssuer as String: issuer,
                                      kSecAttrSerialNumber as String: Data([0x20, 0x02]), kSecReturnData as String: true])
            assertStatus(found.status, errSecSuccess, "by issuer \(issuer.prefix(4) as NSData)")
            XCTAssertEqual(found.result as? Data, certificateDER)
        }
        assertStatus(copyMatching([kSecClass as String: kSecClassCertificate, kSecAttrIssuer as String: tlv(0x30, attribute(commonName, 0x13, "other")),
                                   kSecAttrSerialNumber as String: Data([0x20, 0x02])]).status, errSecItemNotFound, "another issuer")
        assertStatus(SecItemAdd([kSecClass as String: kSecClassCertificate, kSecValueData as String: certificateDER] as CFDictionary, nil),
                     errSecDuplicateItem, "the same issuer and serial")
    }

    func testUpdatingACertificatesDataDerivesItsAttributesAgain() throws {
        let label = unique("update")
        let first = try TLSMaterial(in: dir, commonName: label + "-first", serial: "0x3003")
        let second = try TLSMaterial(in: dir, commonName: label + "-second", serial: "0x3004")
        assertStatus(SecItemAdd([kSecValueRef as String: try first.certificate(), kSecAttrLabel as String: label] as CFDictionary, nil),
                     errSecSuccess, "add")
        func derived(_ tls: TLSMaterial) throws -> [String: Data] {
            let cert = try tls.certificate()
            let subject = try XCTUnwrap(SecCertificateCopyNormalizedSubjectSequence(cert) as Data?).dropFirst(2)
            let klbl = try XCTUnwrap((SecKeyCopyAttributes(try tls.privateKey()) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
            return [kSecAttrSerialNumber as String: SecCertificateCopySerialNumberData(cert, nil)! as Data,
                    kSecAttrSubject as String: Data(subject), kSecAttrIssuer as String: Data(subject), kSecAttrPublicKeyHash as String: klbl]
        }
        func stored() throws -> [String: Data] {
            let attrs = try XCTUnwrap(attributesOf(certQuery(label)))
            var out: [String: Data] = [:]
            for k in [kSecAttrSerialNumber, kSecAttrSubject, kSecAttrIssuer, kSecAttrPublicKeyHash] { out[k as String] = attrs[k as String] as? Data }
            return out
        }
        XCTAssertEqual(try stored(), try derived(first))
        // A certificate object as the new value: its data, and the attributes it brings.
        assertStatus(SecItemUpdate(certQuery(label) as CFDictionary, [kSecValueRef as String: try second.certificate()] as CFDictionary),
                     errSecSuccess, "update by ref")
        XCTAssertEqual(try stored(), try derived(second))
        XCTAssertEqual(dataOf(certQuery(label)).data, second.certificateDER)
        XCTAssertEqual(attributesOf(certQuery(label))?[kSecAttrLabel as String] as? String, label, "the label stays")
        // New DER as data does the same; a serial given beside it is the certificate's again.
        assertStatus(SecItemUpdate(certQuery(label) as CFDictionary, [kSecValueData as String: first.certificateDER,
                                                                      kSecAttrSerialNumber as String: Data([9])] as CFDictionary),
                     errSecSuccess, "update by data")
        XCTAssertEqual(try stored(), try derived(first))
        assertStatus(SecItemUpdate(certQuery(label) as CFDictionary, [kSecValueRef as String: try second.certificate(),
                                                                      kSecValueData as String: first.certificateDER] as CFDictionary),
                     errSecParam, "a certificate and data both")
        // Another item with the second certificate's issuer and serial: the change would collide.
        assertStatus(SecItemAdd([kSecValueRef as String: try second.certificate(), kSecAttrLabel as String: label + "-other"] as CFDictionary, nil),
                     errSecSuccess, "second item")
        assertStatus(SecItemUpdate(certQuery(label) as CFDictionary, [kSecValueRef as String: try second.certificate()] as CFDictionary),
                     errSecDuplicateItem, "its primary key taken")
        XCTAssertEqual(try stored(), try derived(first), "nothing changed")
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
