import KeychainCrypto
import KeychainKeys
import XCTest

/// Ed25519 against RFC 8032's vectors (it is deterministic, so signatures are reproduced byte
/// for byte), and its raw forms through `apple(type:)`.
final class Ed25519Tests: XCTestCase {
    /// RFC 8032 section 7.1: TEST 1 (an empty message) and TEST 2 (one byte).
    static let vectors: [(seed: [UInt8], publicKey: [UInt8], message: [UInt8], signature: [UInt8])] = [
        (Vectors.hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"),
         Vectors.hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"),
         [],
         Vectors.hex("""
             e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155
             5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b
             """)),
        (Vectors.hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"),
         Vectors.hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"),
         [0x72],
         Vectors.hex("""
             92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da
             085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00
             """)),
    ]

    let type = AsymmetricKey.ed25519TypeCode
    let sign = "algid:sign:EdDSA:message-Ed25519"

    func key(_ bytes: [UInt8], isPrivate: Bool) throws -> AsymmetricKey {
        try bytes.withUnsafeBytes { try AsymmetricKey.apple(type: type, isPrivate: isPrivate, $0) }
    }

    func bytes(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

    func testRFC8032Vectors() throws {
        let algorithm = try XCTUnwrap(AppleAlgorithm(rawName: sign))
        for v in Self.vectors {
            let key = try key(v.seed, isPrivate: true)
            XCTAssertEqual(key.kind, .ed25519)
            XCTAssertEqual(key.sizeInBits, 256)
            XCTAssertEqual(key.publicBytes(), v.publicKey, "the public key follows from the seed")
            let signature = try v.message.withUnsafeBytes { try algorithm.sign($0, with: key) }
            XCTAssertEqual(signature, v.signature)

            let pub = try self.key(v.publicKey, isPrivate: false)
            XCTAssertEqual(try key.publicKey().publicBytes(), v.publicKey)
            XCTAssertTrue(try v.message.withUnsafeBytes { try pub.verify(signature: v.signature, message: $0) })
            var flipped = v.signature
            flipped[5] ^= 0x10
            XCTAssertFalse(try v.message.withUnsafeBytes { try pub.verify(signature: flipped, message: $0) })
            XCTAssertFalse(try (v.message + [0]).withUnsafeBytes { try pub.verify(signature: v.signature, message: $0) })
        }
    }

    func testAppleFormsRoundTrip() throws {
        let made = try AsymmetricKey.generateEd25519()
        XCTAssertEqual(made.appleTypeCode, type)
        let seed = bytes(try made.privateBytes())
        XCTAssertEqual(seed.count, 32)
        XCTAssertEqual(made.publicBytes().count, 32)
        let again = try key(seed, isPrivate: true)
        XCTAssertEqual(again.publicBytes(), made.publicBytes())
        XCTAssertEqual(bytes(try again.privateBytes()), seed)
        XCTAssertEqual(try key(made.publicBytes(), isPrivate: false).publicBytes(), made.publicBytes())
        XCTAssertThrowsError(try made.publicKey().privateBytes()) { XCTAssertEqual($0 as? KeyError, .unsupported) }

        let long = try key(seed + made.publicBytes(), isPrivate: true)
        XCTAssertEqual(bytes(try long.privateBytes()), seed, "seed || public key gives back the seed alone")
    }

    func testRefusals() throws {
        let v = Self.vectors[0], other = Self.vectors[1]
        XCTAssertThrowsError(try key(v.seed + other.publicKey, isPrivate: true), "a public half of another seed") {
            XCTAssertEqual($0 as? KeyError, .invalidKeyData)
        }
        for (bytes, isPrivate) in [(Array(v.seed.dropLast()), true), (v.seed + [0], true), ([], true),
                                   (v.publicKey + v.publicKey, false), (Array(v.publicKey.dropLast()), false)] {
            XCTAssertThrowsError(try key(bytes, isPrivate: isPrivate), "\(bytes.count) bytes") {
                XCTAssertEqual($0 as? KeyError, .invalidKeyData)
            }
        }
        let pub = try key(v.publicKey, isPrivate: false)
        let algorithm = try XCTUnwrap(AppleAlgorithm(rawName: sign))
        XCTAssertThrowsError(try v.message.withUnsafeBytes { try algorithm.sign($0, with: pub) }, "a public key does not sign")
        XCTAssertThrowsError(try pub.sign(digest: Array(repeating: 0, count: 32), hash: .sha256, scheme: .ecdsaX962))
    }

    func testAlgorithmNameAndSupport() throws {
        let algorithm = try XCTUnwrap(AppleAlgorithm(rawName: sign))
        XCTAssertEqual(algorithm, .ed25519)
        XCTAssertNil(AppleAlgorithm(rawName: "algid:sign:EdDSA:message-Ed25519:SHA512"))
        XCTAssertNil(AppleAlgorithm(rawName: "algid:sign:EdDSA:digest-Ed25519"))
        XCTAssertTrue(algorithm.supports(.sign, kind: .ed25519, isPrivate: true))
        XCTAssertFalse(algorithm.supports(.sign, kind: .ed25519, isPrivate: false))
        XCTAssertTrue(algorithm.supports(.verify, kind: .ed25519, isPrivate: false))
        XCTAssertFalse(algorithm.supports(.sign, kind: .ec(.p256), isPrivate: true))
        XCTAssertFalse(algorithm.supports(.verify, kind: .rsa, isPrivate: false))
        XCTAssertFalse(algorithm.supports(.encrypt, kind: .ed25519, isPrivate: false))
        for other in ["algid:sign:ECDSA:message-X962:SHA256", "algid:sign:RSA:message-PKCS1v15:SHA256",
                      "algid:encrypt:RSA:OAEP:SHA256", "algid:keyexchange:ECDH"] {
            let a = try XCTUnwrap(AppleAlgorithm(rawName: other))
            for use in [AppleAlgorithm.Use.sign, .verify, .encrypt, .decrypt, .keyExchange] {
                XCTAssertFalse(a.supports(use, kind: .ed25519, isPrivate: true), "\(other) \(use)")
            }
        }
    }

    func testPrivateKeyPEMLengthIsKnownAhead() throws {
        let seed = try AsymmetricKey.generateEd25519().privateBytes()
        let pem = try PEM.privateKey(type: type, apple: seed)
        XCTAssertEqual(PEM.privateKeyLength(type: type, appleLength: 32), pem.count)
        XCTAssertTrue(pem.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
    }
}
