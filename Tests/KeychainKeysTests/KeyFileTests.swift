import Foundation
import KeychainCrypto
import XCTest
@testable import KeychainKeys

/// Key and certificate files read by libcrypto (`KeyFile.read`, for `keychainfs import`): the
/// forms that must parse come back as the same keys, everything else is a `KeyFileError`, and
/// no truncation or changed byte of a real file does anything else.
final class KeyFileTests: XCTestCase {
    /// A secp256k1 key, 256 bits like P-256 but not on it (made by `openssl ecparam -name secp256k1`).
    let secp256k1 = """
    -----BEGIN PRIVATE KEY-----
    MIGEAgEAMBAGByqGSM49AgEGBSuBBAAKBG0wawIBAQQg7yHzr+m7dewpAjGhxZCO
    +JEsZAd0QoXvk4ImUMdhgEahRANCAARkBrbrFW/buSf8vrSurF5qkVGn2sBZUymq
    mbocAvloKPByP5ZHMrgCAxVN4/GKJ/xf3C0y+8Fmqoy7IhCpotwg
    -----END PRIVATE KEY-----

    """

    /// A self-signed P-256 certificate (`openssl req -x509`), CN fixture.example.
    let certificate = """
    -----BEGIN CERTIFICATE-----
    MIIBiTCCAS+gAwIBAgIUObqRSR6bt7DzyclhX4Dsi5MjoRgwCgYIKoZIzj0EAwIw
    GjEYMBYGA1UEAwwPZml4dHVyZS5leGFtcGxlMB4XDTI2MTIwMjAyMDczOVoXDTM2
    MTEyOTAyMDczOVowGjEYMBYGA1UEAwwPZml4dHVyZS5leGFtcGxlMFkwEwYHKoZI
    zj0CAQYIKoZIzj0DAQcDQgAEwEIJ/UKuvdgKir2YKGBKj7MT5qPBcBx3+l8u5hMD
    GiWI2Njr++mx85mLpshxxXbtrYpR+zLUEEnL41xZxdqqTaNTMFEwHQYDVR0OBBYE
    FLX1sLZH8MYheBzIHgWIpAEwjDfSMB8GA1UdIwQYMBaAFLX1sLZH8MYheBzIHgWI
    pAEwjDfSMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAPb9iGT0
    ZWOo36qcw/XT+Rk5FauKHtKMelpyFCPrQRpBAiBHqltXOk7hrjzzYZSGEKzv3qbj
    ZqBYms17vGtX1h8JDw==
    -----END CERTIFICATE-----

    """

    func read(_ bytes: [UInt8]) throws -> [KeyFileObject] { try KeyFile.read(try SecureBytes(copying: bytes)) }

    func text(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

    func testPrivateAndPublicKeysComeBackAsTheSameKeys() throws {
        for key in [try AsymmetricKey.generate(.p256), try AsymmetricKey.generate(.p521), try AsymmetricKey.generateRSA(bits: 2048)] {
            let pkcs8 = try PEM.privateKey(type: key.appleTypeCode, apple: try key.privateBytes())
            guard case .privateKey(let back)? = try read(text(pkcs8)).first else { return XCTFail("not a private key") }
            XCTAssertEqual(text(try back.privateBytes()), text(try key.privateBytes()))
            for spki in [try PEM.publicKey(key), try PEM.publicKeyDER(key)] {
                guard case .publicKey(let pub)? = try read(spki).first else { return XCTFail("not a public key") }
                XCTAssertEqual(pub.publicBytes(), key.publicBytes())
                XCTAssertFalse(pub.isPrivate)
            }
        }
    }

    func testBlocksInOrderAndWhatIsRefused() throws {
        let key = try AsymmetricKey.generate(.p384)
        let pkcs8 = text(try PEM.privateKey(type: 73, apple: try key.privateBytes()))
        let objects = try read(Array("text before\n".utf8) + pkcs8 + Array(certificate.utf8))
        XCTAssertEqual(objects.count, 2)
        guard case .certificate(let c)? = objects.last else { return XCTFail("no certificate") }
        XCTAssertEqual(c.commonName, "fixture.example")
        XCTAssertEqual(try read(c.der).count, 1, "the same certificate as DER")

        XCTAssertThrowsError(try read(Array(secp256k1.utf8))) { XCTAssertEqual($0 as? KeyFileError, .undecodable("private key")) }
        let k1DER = Array(Data(base64Encoded: secp256k1.split(separator: "\n").dropFirst().dropLast().joined())!)
        XCTAssertThrowsError(try read(k1DER)) { XCTAssertEqual($0 as? KeyFileError, .undecodable("private key"), "as DER too") }
        XCTAssertThrowsError(try read(Array("-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n".utf8))) {
            XCTAssertEqual($0 as? KeyFileError, .unknownBlock("X509 CRL"))
        }
        XCTAssertThrowsError(try read(Array("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n".utf8))) {
            XCTAssertEqual($0 as? KeyFileError, .encrypted)
        }
        XCTAssertThrowsError(try read(Array("-----BEGIN nothing after".utf8))) { XCTAssertEqual($0 as? KeyFileError, .empty) }
        XCTAssertThrowsError(try read([])) { XCTAssertEqual($0 as? KeyFileError, .notKeyOrCertificate) }
        XCTAssertThrowsError(try read(c.der + [0])) { XCTAssertEqual($0 as? KeyFileError, .notKeyOrCertificate, "trailing bytes") }
    }

    func testNoTruncationOrChangedByteDoesAnythingButParseOrThrow() throws {
        let key = try AsymmetricKey.generate(.p256)
        let pem = text(try PEM.privateKey(type: 73, apple: try key.privateBytes())) + Array(certificate.utf8)
        let der = try PEM.publicKeyDER(key)
        var outcomes = [0, 0]
        for file in [pem, der] {
            for n in 0..<file.count {
                var changed = file
                changed[n] ^= 0x41
                for candidate in [Array(file.prefix(n)), changed] {
                    do {
                        _ = try read(candidate)
                        outcomes[0] += 1
                    } catch is KeyFileError {
                        outcomes[1] += 1
                    }
                }
            }
        }
        print("key files: \(outcomes[0]) variants parsed, \(outcomes[1]) refused")
        XCTAssertGreaterThan(outcomes[1], 0)
    }
}
