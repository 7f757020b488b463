import CommonCrypto
import Foundation
import XCTest

/// CommonCryptor.h with AES: NIST SP 800-38A's ECB, CBC, CFB, OFB and CTR vectors (F.1-F.5),
/// Apple's statuses, cryptors fed in odd pieces against the one-shot, and `openssl enc`.
final class CryptorTests: XCTestCase {
    // SP 800-38A appendix F
    let key128 = hex("2b7e151628aed2a6abf7158809cf4f3c")
    let key256 = hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
    let iv = hex("000102030405060708090a0b0c0d0e0f")
    let counter = hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
    let plaintext = hex("""
        6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
        30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710
        """)

    func testSP80038AECBAndCBCThroughCCCrypt() {
        let vectors: [(options: Int, key: [UInt8], iv: [UInt8]?, ciphertext: String)] = [
            (kCCOptionECBMode, key128, nil, "3ad77bb40d7a3660a89ecaf32466ef97 f5d3d58503b9699de785895a96fdbaaf 43b1cd7f598ece23881b00e3ed030688 7b0c785e27e8ad3f8223207104725dd4"),
            (kCCOptionECBMode, key256, nil, "f3eed1bdb5d2a03c064b5a7e3db181f8 591ccb10d410ed26dc5ba74a31362870 b6ed21b99ca6f4f9f153e7b1beafed1d 23304b7a39f9f3ff067d8d8f9e24ecc7"),
            (0, key128, iv, "7649abac8119b246cee98e9b12e9197d 5086cb9b507219ee95db113a917678b2 73bed6b8e3c1743b7116e69e22229516 3ff1caa1681fac09120eca307586e1a7"),
            (0, key256, iv, "f58c4c04d6e5f1ba779eabfb5f7bfbd6 9cfc4e967edb808d679f777bc6702c7d 39f23369a9d9bacfa530e26304231461 b2eb05e2c39be9fcda6c19078c6a9d1b"),
        ]
        for (index, v) in vectors.enumerated() {
            let (encStatus, ciphertext) = crypt(kCCEncrypt, v.options, v.key, v.iv, plaintext, room: 64)
            XCTAssertEqual(encStatus, kCCSuccess, "vector \(index)")
            XCTAssertEqual(ciphertext, hex(v.ciphertext), "vector \(index)")
            let (decStatus, decrypted) = crypt(kCCDecrypt, v.options, v.key, v.iv, hex(v.ciphertext), room: 64)
            XCTAssertEqual(decStatus, kCCSuccess)
            XCTAssertEqual(decrypted, plaintext, "vector \(index)")
        }
    }

    func testSP80038AStreamModesThroughCryptors() {
        let vectors: [(mode: Int, key: [UInt8], iv: [UInt8], ciphertext: String)] = [
            (kCCModeCTR, key128, counter, "874d6191b620e3261bef6864990db6ce 9806f66b7970fdff8617187bb9fffdff 5ae4df3edbd5d35e5b4f09020db03eab 1e031dda2fbe03d1792170a0f3009cee"),
            (kCCModeCTR, key256, counter, "601ec313775789a5b7a7f504bbf3d228 f443e3ca4d62b59aca84e990cacaf5c5 2b0930daa23de94ce87017ba2d84988d dfc9c58db67aada613c2dd08457941a6"),
            (kCCModeCFB, key128, iv, "3b3fd92eb72dad20333449f8e83cfb4a c8a64537a0b3a93fcde3cdad9f1ce58b 26751f67a3cbb140b1808cf187a4f4df c04b05357c5d1c0eeac4c66f9ff7f2e6"),
            (kCCModeOFB, key128, iv, "3b3fd92eb72dad20333449f8e83cfb4a 7789508d16918f03f53c52dac54ed825 9740051e9c5fecf64344f7a82260edcc 304c6528f659c77866a510d9c1d6ae5e"),
        ]
        for (index, v) in vectors.enumerated() {
            for (op, input, expected) in [(kCCEncrypt, plaintext, hex(v.ciphertext)), (kCCDecrypt, hex(v.ciphertext), plaintext)] {
                var cryptor: CCCryptorRef?
                XCTAssertEqual(CCCryptorCreateWithMode(CCOperation(op), CCMode(v.mode), CCAlgorithm(kCCAlgorithmAES),
                                                       CCPadding(ccNoPadding), v.iv, v.key, v.key.count, nil, 0, 0,
                                                       CCModeOptions(kCCModeOptionCTR_BE), &cryptor), CCCryptorStatus(kCCSuccess))
                // Pieces of 1, 5, 16 and 42 bytes: a stream mode writes as much as it reads.
                let out = feed(cryptor, input, pieces: [1, 5, 16, 42])
                XCTAssertEqual(out, expected, "vector \(index) op \(op)")
                XCTAssertEqual(CCCryptorRelease(cryptor), CCCryptorStatus(kCCSuccess))
            }
        }
    }

    func testBufferTooSmallReportsTheNeededLength() {
        let data = pattern(100)
        let key = pattern(32, seed: 2)
        var moved = -1
        var small = [UInt8](repeating: 0, count: 100)
        var status = CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding),
                             key, key.count, iv, data, data.count, &small, small.count, &moved)
        XCTAssertEqual(status, CCCryptorStatus(kCCBufferTooSmall))
        XCTAssertEqual(moved, 112)
        // With that much room it works and writes exactly that.
        var room = [UInt8](repeating: 0, count: moved)
        status = CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding),
                         key, key.count, iv, data, data.count, &room, room.count, &moved)
        XCTAssertEqual(status, CCCryptorStatus(kCCSuccess))
        XCTAssertEqual(moved, 112)
        // Decrypting asks for the whole input's length.
        status = CCCrypt(CCOperation(kCCDecrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding),
                         key, key.count, iv, room, room.count, &small, 10, &moved)
        XCTAssertEqual(status, CCCryptorStatus(kCCBufferTooSmall))
        XCTAssertEqual(moved, 112)

        var cryptor: CCCryptorRef?
        XCTAssertEqual(CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, key.count, iv, &cryptor), 0)
        defer { CCCryptorRelease(cryptor) }
        status = CCCryptorUpdate(cryptor, data, 64, &small, 63, &moved)
        XCTAssertEqual(status, CCCryptorStatus(kCCBufferTooSmall))
        XCTAssertEqual(moved, 64)
    }

    func testBadKeyLengthsAreParamErrors() {
        var out = [UInt8](repeating: 0, count: 64)
        var moved = 0
        for length in [0, 8, 15, 17, 31, 33, 64] {
            let key = pattern(length)
            XCTAssertEqual(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding),
                                   key, key.count, iv, plaintext, 16, &out, out.count, &moved),
                           CCCryptorStatus(kCCParamError), "key of \(length) bytes")
            var cryptor: CCCryptorRef?
            XCTAssertEqual(CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key, key.count, iv, &cryptor),
                           CCCryptorStatus(kCCParamError))
            XCTAssertNil(cryptor)
        }
        XCTAssertEqual(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, nil, 16, iv, plaintext, 16,
                               &out, out.count, &moved), CCCryptorStatus(kCCParamError))
    }

    /// A CBC decryption whose last block does not end in valid PKCS#7 padding is kCCDecodeError:
    /// last bytes 00, 11 (over 16), and 02 after a byte that is not 02.
    func testBadPaddingIsDecodeError() {
        for tail in [[0x00], [0x11], [0x03, 0x02]] as [[UInt8]] {
            let block = pattern(16 - tail.count, seed: 5) + tail
            let (status, ciphertext) = crypt(kCCEncrypt, 0, key256, iv, block, room: 16)
            XCTAssertEqual(status, kCCSuccess)
            let (decoded, _) = crypt(kCCDecrypt, kCCOptionPKCS7Padding, key256, iv, ciphertext, room: 32)
            XCTAssertEqual(decoded, kCCDecodeError, "padding ending \(tail)")
        }
        // No ciphertext at all has no padding block either.
        XCTAssertEqual(crypt(kCCDecrypt, kCCOptionPKCS7Padding, key256, iv, [], room: 16).status, kCCDecodeError)
    }

    func testPartialBlocksAreAlignmentErrors() {
        XCTAssertEqual(crypt(kCCEncrypt, 0, key128, iv, pattern(20), room: 64).status, kCCAlignmentError)
        XCTAssertEqual(crypt(kCCEncrypt, kCCOptionECBMode, key128, nil, pattern(15), room: 64).status, kCCAlignmentError)
        XCTAssertEqual(crypt(kCCDecrypt, kCCOptionPKCS7Padding, key128, iv, pattern(33), room: 64).status, kCCAlignmentError)

        var cryptor: CCCryptorRef?
        CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key128, 16, iv, &cryptor)
        defer { CCCryptorRelease(cryptor) }
        var out = [UInt8](repeating: 0, count: 64)
        var moved = 0
        XCTAssertEqual(CCCryptorUpdate(cryptor, plaintext, 20, &out, out.count, &moved), CCCryptorStatus(kCCSuccess))
        XCTAssertEqual(moved, 16)
        XCTAssertEqual(CCCryptorFinal(cryptor, &out, out.count, &moved), CCCryptorStatus(kCCAlignmentError))
    }

    func testUnsupportedAlgorithmsAndModes() {
        var out = [UInt8](repeating: 0, count: 64)
        var moved = 0
        for alg in [kCCAlgorithmDES, kCCAlgorithm3DES, kCCAlgorithmCAST, kCCAlgorithmRC4, kCCAlgorithmRC2, kCCAlgorithmBlowfish] {
            XCTAssertEqual(CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(alg), 0, key128, 16, iv, plaintext, 16, &out, 64, &moved),
                           CCCryptorStatus(kCCUnimplemented))
        }
        XCTAssertEqual(CCCrypt(CCOperation(kCCEncrypt), 99, 0, key128, 16, iv, plaintext, 16, &out, 64, &moved),
                       CCCryptorStatus(kCCParamError))
        XCTAssertEqual(CCCrypt(7, CCAlgorithm(kCCAlgorithmAES), 0, key128, 16, iv, plaintext, 16, &out, 64, &moved),
                       CCCryptorStatus(kCCParamError))
        var cryptor: CCCryptorRef?
        for (mode, options, expected) in [(kCCModeXTS, 0, kCCUnimplemented), (kCCModeCTR, kCCModeOptionCTR_LE, kCCUnimplemented),
                                          (42, 0, kCCParamError)] {
            XCTAssertEqual(CCCryptorCreateWithMode(CCOperation(kCCEncrypt), CCMode(mode), CCAlgorithm(kCCAlgorithmAES),
                                                   CCPadding(ccNoPadding), iv, key128, 16, nil, 0, 0, CCModeOptions(options),
                                                   &cryptor), CCCryptorStatus(expected), "mode \(mode)")
            XCTAssertNil(cryptor)
        }
    }

    /// Cryptors fed in pieces that split blocks every which way give the one-shot's bytes, with
    /// buffers sized by `CCCryptorGetOutputLength`, in both directions and with ECB too.
    func testCryptorInPiecesEqualsOneShot() {
        let key = pattern(24, seed: 22)
        for options in [kCCOptionPKCS7Padding, kCCOptionPKCS7Padding | kCCOptionECBMode, 0, kCCOptionECBMode] {
            // Without padding the input is whole blocks (992 bytes); with it, 1000 bytes pad to 1008.
            let padded = options & kCCOptionPKCS7Padding != 0
            let message = pattern(padded ? 1000 : 992, seed: 21)
            let (status, whole) = crypt(kCCEncrypt, options, key, iv, message, room: 1016)
            XCTAssertEqual(status, kCCSuccess)
            XCTAssertEqual(whole.count, padded ? 1008 : 992)
            for pieces in [[1], [7, 9], [15, 16, 17], [64], [333]] {
                var cryptor: CCCryptorRef?
                XCTAssertEqual(CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(options), key,
                                               key.count, iv, &cryptor), CCCryptorStatus(kCCSuccess))
                XCTAssertEqual(feed(cryptor, message, pieces: pieces), whole, "encrypt in \(pieces)")
                CCCryptorRelease(cryptor)

                XCTAssertEqual(CCCryptorCreate(CCOperation(kCCDecrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(options), key,
                                               key.count, iv, &cryptor), CCCryptorStatus(kCCSuccess))
                XCTAssertEqual(feed(cryptor, whole, pieces: pieces), message, "decrypt in \(pieces)")
                CCCryptorRelease(cryptor)
            }
        }
    }

    func testGetOutputLengthAsApple() {
        var cryptor: CCCryptorRef?
        CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding), key128, 16, iv,
                        &cryptor)
        XCTAssertEqual(CCCryptorGetOutputLength(cryptor, 20, false), 16)
        XCTAssertEqual(CCCryptorGetOutputLength(cryptor, 20, true), 32)
        XCTAssertEqual(CCCryptorGetOutputLength(cryptor, 32, true), 48)
        var out = [UInt8](repeating: 0, count: 64)
        var moved = 0
        CCCryptorUpdate(cryptor, plaintext, 5, &out, 64, &moved)
        XCTAssertEqual(moved, 0)
        XCTAssertEqual(CCCryptorGetOutputLength(cryptor, 11, false), 16)
        CCCryptorRelease(cryptor)

        CCCryptorCreate(CCOperation(kCCDecrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding), key128, 16, iv,
                        &cryptor)
        XCTAssertEqual(CCCryptorGetOutputLength(cryptor, 48, true), 48)
        XCTAssertEqual(CCCryptorGetOutputLength(cryptor, 40, false), 32)
        CCCryptorRelease(cryptor)
    }

    func testResetRestartsWithTheNewIV() {
        var cryptor: CCCryptorRef?
        CCCryptorCreate(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), 0, key128, 16, iv, &cryptor)
        defer { CCCryptorRelease(cryptor) }
        var first = [UInt8](repeating: 0, count: 64), second = [UInt8](repeating: 0, count: 64)
        var moved = 0
        CCCryptorUpdate(cryptor, plaintext, 64, &first, 64, &moved)
        XCTAssertEqual(CCCryptorReset(cryptor, iv), CCCryptorStatus(kCCSuccess))
        CCCryptorUpdate(cryptor, plaintext, 64, &second, 64, &moved)
        XCTAssertEqual(first, second)
        XCTAssertEqual(first, hex("7649abac8119b246cee98e9b12e9197d 5086cb9b507219ee95db113a917678b2 73bed6b8e3c1743b7116e69e22229516 3ff1caa1681fac09120eca307586e1a7"))
        // A nil IV is all zeros, as when CCCryptorCreate gets none.
        CCCryptorReset(cryptor, nil)
        CCCryptorUpdate(cryptor, plaintext, 16, &first, 64, &moved)
        XCTAssertEqual(Array(first[0..<16]), crypt(kCCEncrypt, 0, key128, [UInt8](repeating: 0, count: 16), Array(plaintext[0..<16]),
                                                   room: 16).output)
    }

    /// CCCrypt's AES-256-CBC with PKCS#7 padding against `openssl enc -aes-256-cbc -K .. -iv ..`,
    /// for empty, block-sized and odd inputs, in both directions.
    func testAgainstOpenSSLEnc() throws {
        let key = pattern(32, seed: 31), iv = pattern(16, seed: 32)
        for count in [0, 1, 16, 1000, 4096 + 5] {
            let message = pattern(count, seed: UInt32(33 + count))
            let (status, ours) = crypt(kCCEncrypt, kCCOptionPKCS7Padding, key, iv, message, room: count + 16)
            XCTAssertEqual(status, kCCSuccess)
            guard let theirs = try runOpenSSL(["enc", "-aes-256-cbc", "-K", hexString(key), "-iv", hexString(iv)], input: message)
            else { return }
            XCTAssertEqual(ours, theirs, "\(count) bytes")
            let (back, plain) = crypt(kCCDecrypt, kCCOptionPKCS7Padding, key, iv, theirs, room: theirs.count)
            XCTAssertEqual(back, kCCSuccess)
            XCTAssertEqual(plain, message)
            guard let decrypted = try runOpenSSL(["enc", "-d", "-aes-256-cbc", "-K", hexString(key), "-iv", hexString(iv)],
                                                 input: ours) else { return }
            XCTAssertEqual(decrypted, message, "openssl decrypts ours, \(count) bytes")
        }
    }

    /// The usual Apple-platform helper: `Data` in, `Data` out, `withUnsafeBytes` everywhere.
    func testAppleCallShape() {
        let key = Data(key256), ivData = Data(iv), input = Data(plaintext)
        var output = Data(count: input.count + kCCBlockSizeAES128)
        let capacity = output.count
        var moved: size_t = 0
        let status = output.withUnsafeMutableBytes { out in
            input.withUnsafeBytes { dataIn in
                ivData.withUnsafeBytes { ivBytes in
                    key.withUnsafeBytes { keyBytes in
                        CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding),
                                keyBytes.baseAddress, kCCKeySizeAES256, ivBytes.baseAddress, dataIn.baseAddress, input.count,
                                out.baseAddress, capacity, &moved)
                    }
                }
            }
        }
        XCTAssertTrue(status == kCCSuccess)
        XCTAssertEqual(Int(status), kCCSuccess)
        output.removeSubrange(moved..<output.count)
        XCTAssertEqual(output.count, 80)
        XCTAssertEqual(Array(output.prefix(64)), hex("f58c4c04d6e5f1ba779eabfb5f7bfbd6 9cfc4e967edb808d679f777bc6702c7d 39f23369a9d9bacfa530e26304231461 b2eb05e2c39be9fcda6c19078c6a9d1b"))
    }

    // MARK: Helpers

    private func crypt(_ op: Int, _ options: Int, _ key: [UInt8], _ iv: [UInt8]?, _ input: [UInt8],
                       room: Int) -> (status: Int, output: [UInt8]) {
        var out = [UInt8](repeating: 0, count: room)
        var moved = 0
        let status = iv.withOptionalPointer { ivPointer in
            CCCrypt(CCOperation(op), CCAlgorithm(kCCAlgorithmAES), CCOptions(options), key, key.count, ivPointer, input,
                    input.count, &out, room, &moved)
        }
        return (Int(status), status == kCCSuccess ? Array(out[0..<moved]) : [])
    }

    /// Updates in pieces of the given sizes (cycling), each into a buffer of exactly
    /// `CCCryptorGetOutputLength`, then Final; the bytes out.
    private func feed(_ cryptor: CCCryptorRef?, _ input: [UInt8], pieces: [Int]) -> [UInt8] {
        var result: [UInt8] = []
        var offset = 0, turn = 0
        while offset < input.count {
            let n = min(pieces[turn % pieces.count], input.count - offset)
            turn += 1
            let room = CCCryptorGetOutputLength(cryptor, n, false)
            var out = [UInt8](repeating: 0, count: room)
            var moved = 0
            let status = input.withUnsafeBytes { CCCryptorUpdate(cryptor, $0.baseAddress! + offset, n, &out, room, &moved) }
            XCTAssertEqual(status, CCCryptorStatus(kCCSuccess))
            XCTAssertLessThanOrEqual(moved, room)
            result += out[0..<moved]
            offset += n
        }
        var tail = [UInt8](repeating: 0, count: 16)
        var moved = 0
        XCTAssertEqual(CCCryptorFinal(cryptor, &tail, tail.count, &moved), CCCryptorStatus(kCCSuccess))
        return result + tail[0..<moved]
    }
}

extension Optional where Wrapped == [UInt8] {
    func withOptionalPointer<R>(_ body: (UnsafeRawPointer?) -> R) -> R {
        guard let self else { return body(nil) }
        return self.withUnsafeBytes { body($0.baseAddress) }
    }
}
