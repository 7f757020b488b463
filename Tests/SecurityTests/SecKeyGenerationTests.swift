import Foundation
import KeychainTestSupport
import Security
import XCTest

/// `SecKeyCreateRandomKey` of permanent keys: the private key is made by the daemon and stored
/// there; this process gets the stored key and, when asked, the public key item beside it.
final class SecKeyGenerationTests: SecItemConformanceCase {
    func pair(_ type: CFString, bits: Int, topLevel: Bool) throws -> (tag: Data, key: SecKey) {
        let tag = Data(unique().utf8)
        var error: Unmanaged<CFError>?
        var params: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: bits,
                                     kSecAttrApplicationTag as String: tag]
        if topLevel { params[kSecAttrIsPermanent as String] = true } else {
            params[kSecPrivateKeyAttrs as String] = [kSecAttrIsPermanent as String: true, kSecAttrIsExtractable as String: false]
        }
        let key = try XCTUnwrap(SecKeyCreateRandomKey(params as CFDictionary, &error), "\(String(describing: error))")
        return (tag, key)
    }

    func query(_ tag: Data, _ keyClass: CFString) -> [String: Any] {
        [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag, kSecAttrKeyClass as String: keyClass]
    }

    func testAPermanentPairIsStoredAndItsHalvesMatch() throws {
        for (type, bits) in [(kSecAttrKeyTypeECSECPrimeRandom, 256), (kSecAttrKeyTypeRSA, 2048)] {
            let (tag, key) = try pair(type, bits: bits, topLevel: true)
            var error: Unmanaged<CFError>?
            let attrs = try XCTUnwrap(SecKeyCopyAttributes(key) as? [String: Any])
            XCTAssertEqual(attrs[kSecAttrKeySizeInBits as String] as? Int, bits)
            XCTAssertEqual(attrs[kSecAttrApplicationTag as String] as? Data, tag, "the stored key's attributes")
            // The public key item is the private key's public half, under the same application label.
            let (status, stored) = copyMatching(query(tag, kSecAttrKeyClassPublic).merging([kSecReturnRef as String: true]) { $1 })
            assertStatus(status, errSecSuccess, "public key item")
            let publicItem = try XCTUnwrap(stored as? SecKey)
            let publicHalf = try XCTUnwrap(SecKeyCopyPublicKey(key))
            XCTAssertEqual(SecKeyCopyExternalRepresentation(publicItem, &error) as Data?,
                           SecKeyCopyExternalRepresentation(publicHalf, &error) as Data?)
            let label = try XCTUnwrap(attributesOf(query(tag, kSecAttrKeyClassPrivate))?[kSecAttrApplicationLabel as String] as? Data)
            XCTAssertEqual(attributesOf(query(tag, kSecAttrKeyClassPublic))?[kSecAttrApplicationLabel as String] as? Data, label)
            // It signs in the daemon and the public key item verifies.
            let algorithm: SecKeyAlgorithm = bits == 256 ? .ecdsaSignatureMessageX962SHA256 : .rsaSignatureMessagePSSSHA256
            let message = Data("made in the daemon".utf8) as CFData
            let signature = try XCTUnwrap(SecKeyCreateSignature(key, algorithm, message, &error))
            XCTAssertTrue(SecKeyVerifySignature(publicItem, algorithm, message, signature, &error))
        }
    }

    func testANonExtractablePrivateKeyIsMadeWithoutItsPublicItem() throws {
        let (tag, key) = try pair(kSecAttrKeyTypeECSECPrimeRandom, bits: 384, topLevel: false)
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCopyExternalRepresentation(key, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecDataNotAvailable))
        XCTAssertEqual(count(query(tag, kSecAttrKeyClassPublic)), 0, "only the private key was permanent")
        XCTAssertEqual(count(query(tag, kSecAttrKeyClassPrivate)), 1)
        XCTAssertNotNil(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA384, Data("m".utf8) as CFData, &error))
    }

    func testABadSizeStoresNothing() throws {
        let tag = Data(unique().utf8)
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 255,
                                            kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag] as CFDictionary, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecParam))
        XCTAssertEqual(count([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]), 0)
    }
}
