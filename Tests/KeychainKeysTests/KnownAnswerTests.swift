import KeychainCrypto
import KeychainKeys
import XCTest

/// Published vectors, verify side: OpenSSL's ECDSA is randomised, so signatures are checked,
/// not reproduced.
final class KnownAnswerTests: XCTestCase {
    func bytes(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

    func ecKey(_ bytes: [UInt8], isPrivate: Bool) throws -> AsymmetricKey {
        try bytes.withUnsafeBytes { try AsymmetricKey.ec($0, isPrivate: isPrivate) }
    }

    func rsaKey(_ bytes: [UInt8], isPrivate: Bool) throws -> AsymmetricKey {
        try bytes.withUnsafeBytes { try AsymmetricKey.rsa($0, isPrivate: isPrivate) }
    }

    func testECDHRFC5903P256AndP521() throws {
        for (i, gi, gr, gir, curve) in [(Vectors.p256i, Vectors.p256gi, Vectors.p256gr, Vectors.p256gir, Curve.p256),
                                        (Vectors.p521i, Vectors.p521gi, Vectors.p521gr, Vectors.p521gir, Curve.p521)] {
            let mine = try ecKey(gi + i, isPrivate: true)  // Apple's private form: 04 || X || Y || K
            XCTAssertEqual(mine.kind, .ec(curve))
            XCTAssertEqual(mine.sizeInBits, curve.rawValue)
            XCTAssertEqual(mine.publicBytes(), gi)
            XCTAssertEqual(bytes(try mine.privateBytes()), gi + i, "the scalar is padded to the field size")
            let peer = try ecKey(gr, isPrivate: false)
            XCTAssertEqual(bytes(try mine.sharedSecret(with: peer)), gir, "\(curve)")
        }
    }

    func testECDSAVerifiesRFC6979Signatures() throws {
        let key = try ecKey(Vectors.rfc6979Public, isPrivate: false)
        let message = Array("sample".utf8)
        for (hash, sig) in [(DigestAlgorithm.sha256, Vectors.sampleSHA256), (.sha384, Vectors.sampleSHA384)] {
            let der = Vectors.derSignature(r: sig.r, s: sig.s)
            let digest = hash.hash(message)
            XCTAssertTrue(try key.verify(signature: der, digest: digest, hash: hash, scheme: .ecdsaX962), "\(hash)")
            var bad = der
            bad[bad.count - 1] ^= 1
            XCTAssertFalse(try key.verify(signature: bad, digest: digest, hash: hash, scheme: .ecdsaX962))
            XCTAssertFalse(try key.verify(signature: der, digest: hash.hash(Array("test".utf8)), hash: hash, scheme: .ecdsaX962))
        }
        // The published private key gives the published public key.
        let priv = try ecKey(Vectors.rfc6979Public + Vectors.rfc6979Private, isPrivate: true)
        XCTAssertEqual(priv.publicBytes(), Vectors.rfc6979Public)
    }

    func testRSASignaturesFromPKCS1Vectors() throws {
        let key = try rsaKey(Vectors.pkcs1(fromPKCS8: Vectors.keyAPKCS8), isPrivate: true)
        XCTAssertEqual(key.sizeInBits, 1024)
        let pub = try key.publicKey()
        let v15 = DigestAlgorithm.sha1.hash(Vectors.pkcs1v15Message)
        XCTAssertTrue(try pub.verify(signature: Vectors.pkcs1v15SignatureSHA1, digest: v15, hash: .sha1, scheme: .pkcs1v15))
        XCTAssertFalse(try pub.verify(signature: Vectors.pkcs1v15SignatureSHA1, digest: v15, hash: .sha1, scheme: .pss))
        // PKCS1v15 is deterministic: signing reproduces the published signature.
        XCTAssertEqual(try key.sign(digest: v15, hash: .sha1, scheme: .pkcs1v15), Vectors.pkcs1v15SignatureSHA1)
        let pss = DigestAlgorithm.sha1.hash(Vectors.pssMessage)
        XCTAssertTrue(try pub.verify(signature: Vectors.pssSignatureSHA1, digest: pss, hash: .sha1, scheme: .pss))
        var bad = Vectors.pssSignatureSHA1
        bad[0] ^= 0x40
        XCTAssertFalse(try pub.verify(signature: bad, digest: pss, hash: .sha1, scheme: .pss))
    }

    func testRSADecryptsPKCS1Vectors() throws {
        let key = try rsaKey(Vectors.pkcs1(fromPKCS8: Vectors.keyBPKCS8), isPrivate: true)
        let oaep = try Vectors.oaepCiphertext.withUnsafeBytes { try key.decrypt($0, padding: .oaep(.sha1)) }
        XCTAssertEqual(bytes(oaep), Vectors.oaepMessage)
        let v15 = try Vectors.pkcs1v15CryptCiphertext.withUnsafeBytes { try key.decrypt($0, padding: .pkcs1) }
        XCTAssertEqual(bytes(v15), Vectors.pkcs1v15CryptMessage)
        XCTAssertThrowsError(try Vectors.oaepCiphertext.withUnsafeBytes { try key.decrypt($0, padding: .oaep(.sha256)) }) {
            XCTAssertEqual($0 as? KeyError, .decryptionFailed)
        }
    }

    func testX963KDFMatchesCAVP() throws {
        for v in Vectors.x963 {
            let out = try x963KDF(.sha256, secret: try SecureBytes(copying: v.z), sharedInfo: [], count: v.out.count)
            XCTAssertEqual(bytes(out), v.out)
        }
    }

    func testMalformedKeysAreRefused() throws {
        var offCurve = Vectors.p256gi
        offCurve[40] ^= 1
        XCTAssertThrowsError(try ecKey(offCurve, isPrivate: false)) { XCTAssertEqual($0 as? KeyError, .invalidKeyData) }
        XCTAssertThrowsError(try ecKey(Array(Vectors.p256gi.dropLast()), isPrivate: false))
        // A scalar that does not belong to the point.
        XCTAssertThrowsError(try ecKey(Vectors.p256gr + Vectors.p256i, isPrivate: true)) {
            XCTAssertEqual($0 as? KeyError, .invalidKeyData)
        }
        XCTAssertThrowsError(try rsaKey(Array(Vectors.pkcs1(fromPKCS8: Vectors.keyAPKCS8).dropLast()), isPrivate: true))
        XCTAssertThrowsError(try rsaKey(Vectors.pkcs1(fromPKCS8: Vectors.keyAPKCS8) + [0], isPrivate: true),
                             "trailing bytes are refused")
    }
}
