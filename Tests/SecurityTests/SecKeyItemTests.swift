import Foundation
import KeychainTestSupport
import Security
import XCTest

/// `SecKey`s in the keychain, through the real daemon: `kSecAttrIsPermanent` stores a key as a
/// `kSecClassKey` item, `kSecReturnRef` gives it back as a `SecKey`, `kSecValueRef` adds one.
final class SecKeyItemTests: SecItemConformanceCase {
    func tag() -> Data { Data(unique().utf8) }

    func createPermanent(_ tag: Data, _ extra: [String: Any] = [:]) throws -> SecKey {
        var priv: [String: Any] = [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag]
        for (k, v) in extra { priv[k] = v }
        var error: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                     kSecAttrKeySizeInBits as String: 256, kSecPrivateKeyAttrs as String: priv]
        guard let key = SecKeyCreateRandomKey(params as CFDictionary, &error) else { throw error!.takeRetainedValue() as Error }
        return key
    }

    func keyQuery(_ tag: Data) -> [String: Any] {
        [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]
    }

    func testPermanentKeyIsFoundByTagAndSignsAfterReadingBack() throws {
        let t = tag()
        let created = try createPermanent(t)
        let (status, result) = copyMatching(keyQuery(t).merging([kSecReturnRef as String: true]) { $1 })
        assertStatus(status, errSecSuccess)
        let key = try XCTUnwrap(result as? SecKey, "r_Ref alone gives the SecKey")
        XCTAssertEqual(key, created)
        var error: Unmanaged<CFError>?
        let message = Data("signed with a key from the vault".utf8)
        let sig = try XCTUnwrap(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error))
        XCTAssertTrue(SecKeyVerifySignature(SecKeyCopyPublicKey(created)!, .ecdsaSignatureMessageX962SHA256, message as CFData, sig, &error))
        // The stored item carries Apple's key attributes.
        let attrs = try XCTUnwrap(attributesOf(keyQuery(t)))
        XCTAssertEqual(attrs[kSecAttrKeyClass as String] as? Int, 1)
        XCTAssertEqual(attrs[kSecAttrKeyType as String] as? Int, 73)
        XCTAssertEqual(attrs[kSecAttrKeySizeInBits as String] as? Int, 256)
        XCTAssertEqual(attrs[kSecAttrApplicationLabel as String] as? Data,
                       (SecKeyCopyAttributes(created) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
        XCTAssertEqual(attrs[kSecAttrCanSign as String] as? Int, 1)
        XCTAssertEqual(count(keyQuery(t)), 1, "only the private key was asked to be permanent")
        // The key's attributes include the item's.
        XCTAssertEqual((SecKeyCopyAttributes(key) as? [String: Any])?[kSecAttrApplicationTag as String] as? Data, t)
    }

    func testReturnRefBesideOtherReturnKeysGivesADictionaryWithTheKey() throws {
        let t = tag()
        let created = try createPermanent(t, [kSecAttrLabel as String: "signing key"])
        let q = keyQuery(t).merging([kSecReturnRef as String: true, kSecReturnAttributes as String: true,
                                     kSecReturnPersistentRef as String: true]) { $1 }
        let (status, result) = copyMatching(q)
        assertStatus(status, errSecSuccess)
        let dict = try XCTUnwrap(result as? [String: Any])
        XCTAssertEqual(dict[kSecValueRef as String] as? SecKey, created)
        XCTAssertEqual(dict[kSecAttrLabel as String] as? String, "signing key")
        XCTAssertNotNil(dict[kSecValuePersistentRef as String] as? Data)
        XCTAssertNil(dict[kSecValueData as String], "r_Data was not asked")
        let all = copyMatching(keyQuery(t).merging([kSecReturnRef as String: true, kSecMatchLimit as String: kSecMatchLimitAll]) { $1 })
        XCTAssertEqual((all.result as? [Any])?.count, 1)
        XCTAssertEqual((all.result as? [Any])?.first as? SecKey, created)
        let none = copyMatching(keyQuery(tag()).merging([kSecReturnRef as String: true]) { $1 })
        assertStatus(none.status, errSecItemNotFound)
        XCTAssertNil(none.result)
    }

    func testValueRefAddsAKeyOnce() throws {
        let t = tag()
        var error: Unmanaged<CFError>?
        let rsa = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: 2048] as CFDictionary, &error))
        let add: [String: Any] = [kSecClass as String: kSecClassKey, kSecValueRef as String: rsa, kSecAttrApplicationTag as String: t]
        assertStatus(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        assertStatus(SecItemAdd(add as CFDictionary, nil), errSecDuplicateItem)
        let found = copyMatching(keyQuery(t).merging([kSecReturnRef as String: true]) { $1 }).result as? SecKey
        XCTAssertEqual(found, rsa)
        let plain = Data("for the stored key".utf8)
        let ct = try XCTUnwrap(SecKeyCreateEncryptedData(SecKeyCopyPublicKey(rsa)!, .rsaEncryptionOAEPSHA256, plain as CFData, &error))
        XCTAssertEqual(SecKeyCreateDecryptedData(try XCTUnwrap(found), .rsaEncryptionOAEPSHA256, ct, &error) as Data?, plain)
        // The public half is a separate item (kcls 0); both are found by a query without kcls.
        let pubAdd: [String: Any] = [kSecValueRef as String: SecKeyCopyPublicKey(rsa)!, kSecAttrApplicationTag as String: t]
        assertStatus(SecItemAdd(pubAdd as CFDictionary, nil), errSecSuccess)
        XCTAssertEqual(count(keyQuery(t)), 2)
        let pub = copyMatching(keyQuery(t).merging([kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
                                                    kSecReturnRef as String: true]) { $1 }).result as? SecKey
        XCTAssertEqual(pub, SecKeyCopyPublicKey(rsa))
        assertStatus(SecItemDelete(keyQuery(t) as CFDictionary), errSecSuccess)
        XCTAssertEqual(count(keyQuery(t)), 0)
        // kSecValueRef takes only a key, and only as a key item.
        assertStatus(SecItemAdd([kSecClass: kSecClassKey, kSecValueRef: "not a key"] as CFDictionary, nil), errSecParam)
        assertStatus(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecValueRef: rsa] as CFDictionary, nil), errSecParam)
    }

    /// An Ed25519 seed stored as a key item under keychainfs's type code (Apple has none): the
    /// daemon derives its public key, and it signs there as RFC 8032 says (section 7.1, TEST 2).
    func testStoredEd25519SeedSignsInTheDaemon() throws {
        let t = tag()
        let seed = unhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
        let expected = unhex("""
            92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da\
            085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00
            """)
        let add: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrKeyType as String: "2147509167",
                                  kSecAttrKeyClass as String: kSecAttrKeyClassPrivate, kSecAttrApplicationTag as String: t,
                                  kSecAttrIsExtractable as String: false, kSecValueData as String: seed]
        assertStatus(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        let key = try XCTUnwrap(copyMatching(keyQuery(t).merging([kSecReturnRef as String: true]) { $1 }).result as? SecKey)
        XCTAssertTrue(key.description.contains("Ed25519PrivateKey"), key.description)
        let ed25519 = SecKeyAlgorithm(rawValue: "algid:sign:EdDSA:message-Ed25519" as CFString)
        XCTAssertTrue(SecKeyIsAlgorithmSupported(key, .sign, ed25519))
        XCTAssertFalse(SecKeyIsAlgorithmSupported(key, .sign, .ecdsaSignatureMessageX962SHA256))
        var error: Unmanaged<CFError>?
        let message = Data([0x72])
        let signature = try XCTUnwrap(SecKeyCreateSignature(key, ed25519, message as CFData, &error))
        XCTAssertEqual(signature as Data, expected)
        let publicKey = try XCTUnwrap(SecKeyCopyPublicKey(key))
        XCTAssertTrue(SecKeyVerifySignature(publicKey, ed25519, message as CFData, signature, &error))
        XCTAssertFalse(SecKeyVerifySignature(publicKey, ed25519, Data([0x73]) as CFData, signature, &error))
    }

    /// Bytes from hex text, as RFC 8032 prints its vectors.
    private func unhex(_ hex: String) -> Data {
        let digits = Array(hex.utf8)
        return Data(stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)!
        })
    }

    func testTopLevelPermanentStoresBothHalves() throws {
        let t = tag()
        _ = try createPermanent(t)
        var error: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrIsPermanent as String: true,
                                     kSecAttrApplicationTag as String: t]
        // A new key has a new label (klbl), so it is another item: both private and public stored.
        XCTAssertNotNil(SecKeyCreateRandomKey(params as CFDictionary, &error))
        XCTAssertEqual(count(keyQuery(t)), 3, "top-level kSecAttrIsPermanent stores the private and the public key")
    }
}
