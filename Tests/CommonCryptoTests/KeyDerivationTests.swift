import CommonCrypto
import Foundation
import XCTest

/// CommonKeyDerivation.h: RFC 6070's PBKDF2-HMAC-SHA1 vectors, RFC 7914's PBKDF2-HMAC-SHA256
/// vector, and the kCCParamError cases.
final class KeyDerivationTests: XCTestCase {
    func testRFC6070() {
        let vectors: [(password: [UInt8], salt: [UInt8], rounds: UInt32, expected: String)] = [
            (Array("password".utf8), Array("salt".utf8), 1, "0c60c80f961f0e71f3a9b524af6012062fe037a6"),
            (Array("password".utf8), Array("salt".utf8), 2, "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"),
            (Array("password".utf8), Array("salt".utf8), 4096, "4b007901b765489abead49d926f721d065a429c1"),
            (Array("passwordPASSWORDpassword".utf8), Array("saltSALTsaltSALTsaltSALTsaltSALTsalt".utf8), 4096,
             "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038"),
            (Array("pass\0word".utf8), Array("sa\0lt".utf8), 4096, "56fa6aa75548099dcc37d7f03425e0c3"),
        ]
        for v in vectors {
            let expected = hex(v.expected)
            var derived = [UInt8](repeating: 0, count: expected.count)
            let status = v.password.withUnsafeBytes { password in
                CCKeyDerivationPBKDF(CCPBKDFAlgorithm(kCCPBKDF2), password.bindMemory(to: CChar.self).baseAddress, v.password.count,
                                     v.salt, v.salt.count, CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA1), v.rounds,
                                     &derived, derived.count)
            }
            XCTAssertEqual(status, Int32(kCCSuccess))
            XCTAssertEqual(derived, expected, "\(v.rounds) rounds")
        }
    }

    /// RFC 7914 section 11: PBKDF2-HMAC-SHA256, P = "passwd", S = "salt", c = 1, dkLen = 64; as
    /// Apple-platform code calls it, with a `String` password and `Data`.
    func testRFC7914SHA256() {
        let password = "passwd"
        let salt = Data("salt".utf8)
        var derived = Data(count: 64)
        let count = derived.count
        let status = derived.withUnsafeMutableBytes { dk in
            salt.withUnsafeBytes { s in
                CCKeyDerivationPBKDF(CCPBKDFAlgorithm(kCCPBKDF2), password, password.lengthOfBytes(using: .utf8),
                                     s.bindMemory(to: UInt8.self).baseAddress, salt.count,
                                     CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA256), 1, dk.bindMemory(to: UInt8.self).baseAddress,
                                     count)
            }
        }
        XCTAssertEqual(status, Int32(kCCSuccess))
        XCTAssertEqual(Array(derived), hex("""
            55 ac 04 6e 56 e3 08 9f ec 16 91 c2 25 44 b6 05 f9 41 85 21 6d de 04 65 e6 8b 9d 57 c2 0d ac bc
            49 ca 9c cc f1 79 b6 45 99 16 64 b3 9d 77 ef 31 7c 71 b8 45 b1 e3 0b d5 09 11 20 41 d3 a1 97 83
            """))
    }

    func testParamErrors() {
        var out = [UInt8](repeating: 0, count: 32)
        let salt = Array("salt".utf8)
        let sha256 = CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA256), pbkdf2 = CCPBKDFAlgorithm(kCCPBKDF2)
        XCTAssertEqual(CCKeyDerivationPBKDF(pbkdf2, "pw", 2, salt, salt.count, sha256, 0, &out, 32), Int32(kCCParamError),
                       "zero rounds")
        XCTAssertEqual(CCKeyDerivationPBKDF(pbkdf2, "pw", 2, salt, salt.count, 9, 10, &out, 32), Int32(kCCParamError),
                       "unknown PRF")
        XCTAssertEqual(CCKeyDerivationPBKDF(1, "pw", 2, salt, salt.count, sha256, 10, &out, 32), Int32(kCCParamError),
                       "not PBKDF2")
        XCTAssertEqual(CCKeyDerivationPBKDF(pbkdf2, "pw", 2, salt, salt.count, sha256, 10, &out, 0), Int32(kCCParamError),
                       "empty output")
        XCTAssertEqual(CCKeyDerivationPBKDF(pbkdf2, nil, 0, salt, salt.count, sha256, 10, &out, 32), Int32(kCCParamError),
                       "nil password")
        XCTAssertEqual(CCKeyDerivationPBKDF(pbkdf2, "pw", 2, nil, 0, sha256, 10, &out, 32), Int32(kCCParamError), "nil salt")
        XCTAssertEqual(CCKeyDerivationPBKDF(pbkdf2, "pw", 2, salt, salt.count, sha256, 10, nil, 32), Int32(kCCParamError),
                       "nil output")
    }

    func testCalibrateGivesRoundsThatScaleWithTime() {
        let short = CCCalibratePBKDF(CCPBKDFAlgorithm(kCCPBKDF2), 8, 16, CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA256), 32, 10)
        let long = CCCalibratePBKDF(CCPBKDFAlgorithm(kCCPBKDF2), 8, 16, CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA256), 32, 1000)
        XCTAssertGreaterThan(short, 0)
        XCTAssertLessThan(short, UInt32.max)
        XCTAssertGreaterThan(long, short)
        XCTAssertEqual(CCCalibratePBKDF(CCPBKDFAlgorithm(kCCPBKDF2), 8, 0, CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA256), 32, 10),
                       UInt32.max, "no salt")
    }
}
