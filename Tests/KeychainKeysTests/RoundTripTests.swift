import KeychainCrypto
import KeychainKeys
import XCTest

/// Keys made here: their encodings read back, their signatures verify, their ciphertexts open.
final class RoundTripTests: XCTestCase {
    func bytes(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

    func testECKeysRoundTripAndSign() throws {
        for curve in Curve.allCases {
            let key = try AsymmetricKey.generate(curve)
            XCTAssertEqual(key.publicBytes().count, curve.publicLength)
            let exported = try key.privateBytes()
            let back = try exported.withUnsafeBytes { try AsymmetricKey.ec($0, isPrivate: true) }
            XCTAssertEqual(back.publicBytes(), key.publicBytes())
            let digest = DigestAlgorithm.sha256.hash(Array("message".utf8))
            let sig = try back.sign(digest: digest, hash: .sha256, scheme: .ecdsaX962)
            XCTAssertTrue(try key.publicKey().verify(signature: sig, digest: digest, hash: .sha256, scheme: .ecdsaX962))
            XCTAssertThrowsError(try key.publicKey().sign(digest: digest, hash: .sha256, scheme: .ecdsaX962)) {
                XCTAssertEqual($0 as? KeyError, .unsupported)
            }
        }
    }

    func testRSAKeyRoundTripSignAndEncrypt() throws {
        let key = try AsymmetricKey.generateRSA(bits: 2048)
        XCTAssertEqual(key.sizeInBits, 2048)
        let back = try key.privateBytes().withUnsafeBytes { try AsymmetricKey.rsa($0, isPrivate: true) }
        XCTAssertEqual(back.publicBytes(), key.publicBytes())
        let digest = DigestAlgorithm.sha512.hash(Array("m".utf8))
        for scheme in [SignatureScheme.pkcs1v15, .pss] {
            let sig = try back.sign(digest: digest, hash: .sha512, scheme: scheme)
            XCTAssertEqual(sig.count, 256)
            XCTAssertTrue(try key.publicKey().verify(signature: sig, digest: digest, hash: .sha512, scheme: scheme))
        }
        for padding in [RSAEncryptionPadding.pkcs1, .oaep(.sha1), .oaep(.sha256)] {
            let longest = [UInt8](repeating: 7, count: key.maximumPlaintext(padding))
            let ct = try longest.withUnsafeBytes { try key.publicKey().encrypt($0, padding: padding) }
            XCTAssertEqual(bytes(try ct.withUnsafeBytes { try back.decrypt($0, padding: padding) }), longest)
            XCTAssertThrowsError(try (longest + [0]).withUnsafeBytes { try key.encrypt($0, padding: padding) }) {
                XCTAssertEqual($0 as? KeyError, .invalidInput)
            }
        }
        XCTAssertThrowsError(try AsymmetricKey.generateRSA(bits: 512)) { XCTAssertEqual($0 as? KeyError, .invalidInput) }
    }

    func testECIESRoundTripsAndRejectsTampering() throws {
        for curve in Curve.allCases {
            let key = try AsymmetricKey.generate(curve)
            for variableIV in [false, true] {
                for message in [[UInt8](), Array("a secret".utf8), [UInt8](repeating: 1, count: 1000)] {
                    var ct = try message.withUnsafeBytes {
                        try ECIES.encrypt($0, to: try key.publicKey(), hash: .sha256, variableIV: variableIV)
                    }
                    XCTAssertEqual(ct.count, curve.publicLength + message.count + 16)
                    let pt = try ct.withUnsafeBytes { try ECIES.decrypt($0, with: key, hash: .sha256, variableIV: variableIV) }
                    XCTAssertEqual(bytes(pt), message)
                    XCTAssertThrowsError(try ct.withUnsafeBytes {
                        try ECIES.decrypt($0, with: key, hash: .sha256, variableIV: !variableIV)
                    })
                    ct[ct.count - 1] ^= 1
                    XCTAssertThrowsError(try ct.withUnsafeBytes { try ECIES.decrypt($0, with: key, hash: .sha256, variableIV: variableIV) }) {
                        XCTAssertEqual($0 as? KeyError, .decryptionFailed)
                    }
                }
            }
        }
    }
}
