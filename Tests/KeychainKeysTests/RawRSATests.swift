import KeychainCrypto
import KeychainKeys
import XCTest

/// Raw RSA (`rsaEncryptionRaw`, `rsaSignatureRaw`) against the PKCS #1 v1.5 vector of
/// `KnownAnswerTests`: the bare private operation on the encoded message (EMSA-PKCS1-v1_5,
/// RFC 8017 9.2, built here by hand) is the published signature, and the public operation on
/// the signature gives the encoded message back.
final class RawRSATests: XCTestCase {
    func bytes(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

    /// `00 01 FF..FF 00 || DigestInfo(SHA-1, digest)` for a `k`-byte modulus.
    func encodedMessage(_ digest: [UInt8], k: Int) -> [UInt8] {
        let info: [UInt8] = [0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14] + digest
        return [0x00, 0x01] + [UInt8](repeating: 0xFF, count: k - info.count - 3) + [0x00] + info
    }

    func testRawOperationsReproduceThePKCS1Vector() throws {
        let key = try Vectors.pkcs1(fromPKCS8: Vectors.keyAPKCS8).withUnsafeBytes { try AsymmetricKey.rsa($0, isPrivate: true) }
        let pub = try key.publicKey()
        let em = encodedMessage(DigestAlgorithm.sha1.hash(Vectors.pkcs1v15Message), k: 128)
        XCTAssertEqual(bytes(try em.withUnsafeBytes { try key.rawPrivate($0) }), Vectors.pkcs1v15SignatureSHA1)
        XCTAssertEqual(try Vectors.pkcs1v15SignatureSHA1.withUnsafeBytes { try pub.rawPublic($0) }, em)
        // Through Apple's algorithm names: the signature, and the block on decryption.
        let sign = try XCTUnwrap(AppleAlgorithm(rawName: "algid:sign:RSA:raw"))
        let crypt = try XCTUnwrap(AppleAlgorithm(rawName: "algid:encrypt:RSA:raw"))
        XCTAssertEqual(sign, .rsaSignatureRaw)
        XCTAssertEqual(crypt, .rsaEncryptionRaw)
        XCTAssertEqual(try em.withUnsafeBytes { try sign.sign($0, with: key) }, Vectors.pkcs1v15SignatureSHA1)
        XCTAssertEqual(bytes(try Vectors.pkcs1v15SignatureSHA1.withUnsafeBytes { try crypt.decrypt($0, with: key) }),
                       try Vectors.pkcs1v15SignatureSHA1.withUnsafeBytes { try key.rawPrivate($0) }.withUnsafeBytes { Array($0) })
        XCTAssertTrue(sign.supports(.sign, kind: .rsa, isPrivate: true))
        XCTAssertFalse(sign.supports(.sign, kind: .rsa, isPrivate: false))
        XCTAssertTrue(sign.supports(.verify, kind: .rsa, isPrivate: false))
        XCTAssertTrue(crypt.supports(.encrypt, kind: .rsa, isPrivate: false))
        XCTAssertFalse(crypt.supports(.decrypt, kind: .rsa, isPrivate: false))
        XCTAssertFalse(crypt.supports(.encrypt, kind: .ec(.p256), isPrivate: false))
    }

    func testShortInputIsANumberAndTooLargeIsRefused() throws {
        let key = try Vectors.pkcs1(fromPKCS8: Vectors.keyAPKCS8).withUnsafeBytes { try AsymmetricKey.rsa($0, isPrivate: true) }
        let pub = try key.publicKey()
        let short: [UInt8] = [0x01, 0x02, 0x03]
        let cipher = try short.withUnsafeBytes { try pub.rawPublic($0) }
        XCTAssertEqual(cipher.count, 128)
        XCTAssertEqual(try ([UInt8](repeating: 0, count: 125) + short).withUnsafeBytes { try pub.rawPublic($0) }, cipher,
                       "leading zeros do not change the number")
        XCTAssertEqual(bytes(try cipher.withUnsafeBytes { try key.rawPrivate($0) }), [UInt8](repeating: 0, count: 125) + short)
        for bad in [[UInt8](repeating: 0xFF, count: 128), [UInt8](repeating: 0, count: 129)] {
            XCTAssertThrowsError(try bad.withUnsafeBytes { try pub.rawPublic($0) }) { XCTAssertEqual($0 as? KeyError, .invalidInput) }
            XCTAssertThrowsError(try bad.withUnsafeBytes { try key.rawPrivate($0) }) { XCTAssertEqual($0 as? KeyError, .invalidInput) }
        }
        XCTAssertThrowsError(try short.withUnsafeBytes { try pub.rawPrivate($0) }) { XCTAssertEqual($0 as? KeyError, .unsupported) }
        let ec = try AsymmetricKey.generate(.p256)
        XCTAssertThrowsError(try short.withUnsafeBytes { try ec.rawPublic($0) }) { XCTAssertEqual($0 as? KeyError, .unsupported) }
    }
}
