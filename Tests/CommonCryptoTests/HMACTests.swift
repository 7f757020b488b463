import CommonCrypto
import Foundation
import XCTest

/// CommonHMAC.h: RFC 4231's HMAC-SHA-2 cases, RFC 2202's HMAC-SHA-1 and HMAC-MD5, the context
/// calls against the one-shot, and `openssl dgst -hmac` on the same inputs.
final class HMACTests: XCTestCase {
    private let cases: [(key: [UInt8], data: [UInt8], sha224: String, sha256: String, sha384: String, sha512: String)] = [
        // RFC 4231 4.2, test case 1
        ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
         "896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22",
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
         "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6",
         "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"),
        // RFC 4231 4.3, test case 2: a key shorter than the output
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
         "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
         "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649",
         "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"),
        // RFC 4231 4.7, test case 6: a key longer than the block, hashed first
        ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
         "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c60c2ef6ab4030fe8296248df163f44952",
         "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"),
    ]

    func testRFC4231() {
        for (index, c) in cases.enumerated() {
            XCTAssertEqual(hexString(hmac(kCCHmacAlgSHA224, c.key, c.data)), c.sha224, "case \(index)")
            XCTAssertEqual(hexString(hmac(kCCHmacAlgSHA256, c.key, c.data)), c.sha256, "case \(index)")
            XCTAssertEqual(hexString(hmac(kCCHmacAlgSHA384, c.key, c.data)), c.sha384, "case \(index)")
            XCTAssertEqual(hexString(hmac(kCCHmacAlgSHA512, c.key, c.data)), c.sha512, "case \(index)")
        }
    }

    func testRFC2202() {
        let key = Array("Jefe".utf8), data = Array("what do ya want for nothing?".utf8)
        XCTAssertEqual(hexString(hmac(kCCHmacAlgSHA1, key, data)), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        XCTAssertEqual(hexString(hmac(kCCHmacAlgMD5, key, data)), "750c783e6ab0b503eaa86e310a5db738")
        // RFC 2202 test case 1 for HMAC-SHA-1
        XCTAssertEqual(hexString(hmac(kCCHmacAlgSHA1, [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8))),
                       "b617318655057264e28bc0b6fb378c8ef146be00")
    }

    func testContextEqualsOneShotAndCopiesFork() {
        let key = pattern(40, seed: 3), data = pattern(500, seed: 4)
        for algorithm in [kCCHmacAlgSHA1, kCCHmacAlgMD5, kCCHmacAlgSHA224, kCCHmacAlgSHA256, kCCHmacAlgSHA384, kCCHmacAlgSHA512] {
            let whole = hmac(algorithm, key, data)
            var ctx = CCHmacContext()
            CCHmacInit(&ctx, CCHmacAlgorithm(algorithm), key, key.count)
            data.withUnsafeBytes { bytes in
                CCHmacUpdate(&ctx, bytes.baseAddress, 1)
                CCHmacUpdate(&ctx, bytes.baseAddress! + 1, 200)
                var fork = ctx
                CCHmacUpdate(&fork, bytes.baseAddress! + 201, 299)
                var forked = [UInt8](repeating: 0, count: whole.count)
                CCHmacFinal(&fork, &forked)
                XCTAssertEqual(forked, whole, "fork, algorithm \(algorithm)")
                CCHmacUpdate(&ctx, bytes.baseAddress! + 201, 299)
            }
            var mac = [UInt8](repeating: 0, count: whole.count)
            CCHmacFinal(&ctx, &mac)
            XCTAssertEqual(mac, whole, "algorithm \(algorithm)")
        }
    }

    /// As Apple-platform code writes it: a `String` key and message through `Data`.
    func testAppleCallShape() {
        let key = "key", message = "The quick brown fox jumps over the lazy dog"
        var mac = [UInt8](repeating: 0, count: Int(CC_SHA256_DIGEST_LENGTH))
        CCHmac(CCHmacAlgorithm(kCCHmacAlgSHA256), key, key.count, message, message.count, &mac)
        // The widely published HMAC-SHA256("key", "The quick brown fox ...").
        XCTAssertEqual(hexString(mac), "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8")

        let keyData = Data(key.utf8), messageData = Data(message.utf8)
        var out = Data(count: Int(CC_SHA1_DIGEST_LENGTH))
        out.withUnsafeMutableBytes { macOut in
            keyData.withUnsafeBytes { k in
                messageData.withUnsafeBytes { m in
                    CCHmac(CCHmacAlgorithm(kCCHmacAlgSHA1), k.baseAddress, k.count, m.baseAddress, m.count, macOut.baseAddress)
                }
            }
        }
        XCTAssertEqual(hexString(Array(out)), "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9")
    }

    func testEmptyKeyAndMessage() {
        var mac = [UInt8](repeating: 0, count: 32)
        CCHmac(CCHmacAlgorithm(kCCHmacAlgSHA256), nil, 0, nil, 0, &mac)
        XCTAssertEqual(hexString(mac), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    /// The same keys and messages through `openssl dgst -hmac` (the key as text) and
    /// `-mac HMAC -macopt hexkey:` (a binary key).
    func testAgainstOpenSSLDgst() throws {
        let message = pattern(3000, seed: 9)
        for (flag, algorithm, length) in [("-sha256", kCCHmacAlgSHA256, 32), ("-sha512", kCCHmacAlgSHA512, 64),
                                          ("-sha1", kCCHmacAlgSHA1, 20)] {
            let textKey = "keychainfs test key"
            guard let printed = try runOpenSSL(["dgst", flag, "-hmac", textKey], input: message) else { return }
            let theirs = hex(String(decoding: printed, as: UTF8.self).components(separatedBy: "= ").last!)
            let ours = hmac(algorithm, Array(textKey.utf8), message)
            XCTAssertEqual(ours.count, length)
            XCTAssertEqual(ours, theirs, flag)

            let binaryKey = pattern(100, seed: 11)
            guard let printed2 = try runOpenSSL(["dgst", flag, "-mac", "HMAC", "-macopt", "hexkey:" + hexString(binaryKey)],
                                                input: message) else { return }
            let theirs2 = hex(String(decoding: printed2, as: UTF8.self).components(separatedBy: "= ").last!)
            XCTAssertEqual(hmac(algorithm, binaryKey, message), theirs2, flag + " hexkey")
        }
    }

    private func hmac(_ algorithm: Int, _ key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        let length: Int
        switch algorithm {
        case kCCHmacAlgSHA1: length = 20
        case kCCHmacAlgMD5: length = 16
        case kCCHmacAlgSHA224: length = 28
        case kCCHmacAlgSHA256: length = 32
        case kCCHmacAlgSHA384: length = 48
        default: length = 64
        }
        var mac = [UInt8](repeating: 0, count: length)
        CCHmac(CCHmacAlgorithm(algorithm), key, key.count, data, data.count, &mac)
        return mac
    }
}
