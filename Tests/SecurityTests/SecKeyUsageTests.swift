import Foundation
import KeychainTestSupport
import Security
import XCTest

/// The usage flags of a stored private key, enforced by the daemon as macOS's keychain enforces
/// a key header's usage: `kSecAttrCanSign` false refuses signing, `kSecAttrCanDecrypt` false
/// decryption, `kSecAttrCanDerive` false key exchange, each with errSecKeyUsageIncorrect; and
/// `kSecAttrIsSensitive` true keeps the key's bytes in (errSecPassphraseRequired, as macOS's
/// export of a sensitive key without a wrapping passphrase).
final class SecKeyUsageTests: SecItemConformanceCase {
    /// A new permanent P-256 pair whose private key has `extra` attributes, read back by its tag.
    func storedKey(_ extra: [String: Any]) throws -> SecKey {
        let tag = Data(unique().utf8)
        var priv: [String: Any] = [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag]
        for (k, v) in extra { priv[k] = v }
        var error: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                                     kSecPrivateKeyAttrs as String: priv]
        guard SecKeyCreateRandomKey(params as CFDictionary, &error) != nil else { throw error!.takeRetainedValue() as Error }
        let (status, result) = copyMatching([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                                             kSecAttrKeyClass as String: kSecAttrKeyClassPrivate, kSecReturnRef as String: true])
        assertStatus(status, errSecSuccess, "r_Ref")
        return try XCTUnwrap(result as? SecKey)
    }

    func code(_ error: Unmanaged<CFError>?) -> Int? { error.map { CFErrorGetCode($0.takeRetainedValue()) } }

    func sign(_ key: SecKey) -> Int? {
        var error: Unmanaged<CFError>?
        let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, &error)
        XCTAssertEqual(signature == nil, error != nil)
        return code(error)
    }

    func decrypt(_ key: SecKey) throws -> Int? {
        var error: Unmanaged<CFError>?
        let algorithm = SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM
        let sealed = try XCTUnwrap(SecKeyCreateEncryptedData(try XCTUnwrap(SecKeyCopyPublicKey(key)), algorithm,
                                                             Data("plain".utf8) as CFData, &error))
        let opened = SecKeyCreateDecryptedData(key, algorithm, sealed, &error) as Data?
        if opened != nil { XCTAssertEqual(opened, Data("plain".utf8)) }
        return code(error)
    }

    func exchange(_ key: SecKey) throws -> Int? {
        var error: Unmanaged<CFError>?
        let peer = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                                        kSecAttrKeySizeInBits as String: 256] as CFDictionary, &error))
        let shared = SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeStandard, try XCTUnwrap(SecKeyCopyPublicKey(peer)),
                                                 [:] as CFDictionary, &error)
        XCTAssertEqual(shared == nil, error != nil)
        return code(error)
    }

    func testEveryUseIsAllowedByDefault() throws {
        let key = try storedKey([:])
        XCTAssertNil(sign(key))
        XCTAssertNil(try decrypt(key))
        XCTAssertNil(try exchange(key))
    }

    func testAKeyThatMayNotSignDoesNotSign() throws {
        let key = try storedKey([kSecAttrCanSign as String: false])
        XCTAssertEqual(sign(key), Int(errSecKeyUsageIncorrect), "-67731, macOS's CSSMERR_CSP_KEY_USAGE_INCORRECT")
        XCTAssertNil(try decrypt(key), "the other uses are not affected")
        XCTAssertNil(try exchange(key))
    }

    func testAKeyThatMayNotDecryptDoesNotDecrypt() throws {
        let key = try storedKey([kSecAttrCanDecrypt as String: false])
        XCTAssertEqual(try decrypt(key), Int(errSecKeyUsageIncorrect))
        XCTAssertNil(sign(key))
    }

    func testAKeyThatMayNotDeriveDoesNotAgree() throws {
        let key = try storedKey([kSecAttrCanDerive as String: false])
        XCTAssertEqual(try exchange(key), Int(errSecKeyUsageIncorrect))
        XCTAssertNil(sign(key))
    }
    func testASensitiveKeyIsUsedButNeverReadInTheClear() throws {
        let key = try storedKey([kSecAttrIsSensitive as String: true])
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCopyExternalRepresentation(key, &error))
        XCTAssertEqual(code(error), Int(errSecPassphraseRequired), "-25260")
        let klbl = try XCTUnwrap((SecKeyCopyAttributes(key) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: klbl,
                                    kSecAttrKeyClass as String: kSecAttrKeyClassPrivate]
        assertStatus(dataOf(query).status, errSecPassphraseRequired, "r_Data")
        let attrs = try XCTUnwrap(attributesOf(query))
        XCTAssertEqual(attrs[kSecAttrIsSensitive as String] as? Bool, true)
        XCTAssertNil(sign(key), "it signs in the daemon")
        XCTAssertNil(try decrypt(key))
        // Its public half is not sensitive, and an ordinary key exports as before.
        XCTAssertNotNil(SecKeyCopyPublicKey(key).flatMap { SecKeyCopyExternalRepresentation($0, &error) })
        let plain = try storedKey([:])
        XCTAssertEqual((SecKeyCopyExternalRepresentation(plain, &error) as Data?)?.count, 97, "04 || X || Y || K")
    }
}
