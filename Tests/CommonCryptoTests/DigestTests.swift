import CommonCrypto
import Foundation
import XCTest

/// CommonDigest.h: FIPS 180-4's examples (the "abc" and 448-bit messages, a million 'a'),
/// RFC 1321's MD5 suite, and the Init/Update/Final forms against the one-shot ones.
final class DigestTests: XCTestCase {
    let abc = Array("abc".utf8)
    let twoBlocks = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)

    func testFIPS180Examples() {
        XCTAssertEqual(sha1(abc), hex("a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d"))
        XCTAssertEqual(sha1(twoBlocks), hex("84983e44 1c3bd26e baae4aa1 f95129e5 e54670f1"))
        XCTAssertEqual(sha224(abc), hex("23097d22 3405d822 8642a477 bda255b3 2aadbce4 bda0b3f7 e36c9da7"))
        XCTAssertEqual(sha256(abc), hex("ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad"))
        XCTAssertEqual(sha256(twoBlocks), hex("248d6a61 d20638b8 e5c02693 0c3e6039 a33ce459 64ff2167 f6ecedd4 19db06c1"))
        XCTAssertEqual(sha384(abc), hex("""
            cb00753f 45a35e8b b5a03d69 9ac65007 272c32ab 0eded163 1a8b605a 43ff5bed 8086072b a1e7cc23 58baeca1 34c825a7
            """))
        XCTAssertEqual(sha512(abc), hex("""
            ddaf35a1 93617aba cc417349 ae204131 12e6fa4e 89a97ea2 0a9eeee6 4b55d39a
            2192992a 274fc1a8 36ba3c23 a3feebbd 454d4423 643ce80e 2a9ac94f a54ca49f
            """))
        let million = [UInt8](repeating: 0x61, count: 1_000_000)
        XCTAssertEqual(sha1(million), hex("34aa973c d4c4daa4 f61eeb2b dbad2731 6534016f"))
        XCTAssertEqual(sha256(million), hex("cdc76e5c 9914fb92 81a1c7e2 84d73e67 f1809a48 a497200e 046d39cc c7112cd0"))
    }

    func testRFC1321MD5Suite() {
        let suite: [(String, String)] = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
            ("12345678901234567890123456789012345678901234567890123456789012345678901234567890",
             "57edf4a22be3c955ac49da2e2107b67a"),
        ]
        for (message, expected) in suite {
            var digest = [UInt8](repeating: 0, count: Int(CC_MD5_DIGEST_LENGTH))
            let returned = CC_MD5(message, CC_LONG(message.utf8.count), &digest)
            XCTAssertNotNil(returned, message)
            XCTAssertEqual(hexString(digest), expected, message)
        }
    }

    /// The shapes Apple-platform code uses: a `Data` extension over `withUnsafeBytes`, a `String`
    /// passed where `const void *` is expected, the lengths as `CC_LONG` and `Int32` constants.
    func testAppleCallShapesCompileAndAgree() {
        let data = Data("abc".utf8)
        var hash = [UInt8](repeating: 0, count: Int(CC_SHA256_DIGEST_LENGTH))
        data.withUnsafeBytes { _ = CC_SHA256($0.baseAddress, CC_LONG(data.count), &hash) }
        XCTAssertEqual(hash, sha256(abc))

        let text = "abc"
        var sha1Digest = [UInt8](repeating: 0, count: Int(CC_SHA1_DIGEST_LENGTH))
        CC_SHA1(text, CC_LONG(text.lengthOfBytes(using: .utf8)), &sha1Digest)
        XCTAssertEqual(sha1Digest, sha1(abc))

        var out = Data(count: Int(CC_SHA512_DIGEST_LENGTH))
        out.withUnsafeMutableBytes { md in
            data.withUnsafeBytes { _ = CC_SHA512($0.baseAddress, CC_LONG($0.count), md.bindMemory(to: UInt8.self).baseAddress) }
        }
        XCTAssertEqual(Array(out), sha512(abc))
        XCTAssertEqual([CC_SHA224_BLOCK_BYTES, CC_SHA256_BLOCK_BYTES, CC_SHA384_BLOCK_BYTES, CC_SHA512_BLOCK_BYTES],
                       [64, 64, 128, 128])
    }

    func testIncrementalEqualsOneShotAtEverySplit() {
        let message = pattern(300, seed: 7)
        let whole256 = sha256(message), whole384 = sha384(message), whole1 = sha1(message)
        for split in [0, 1, 55, 56, 63, 64, 65, 128, 299, 300] {
            var ctx = CC_SHA256_CTX()
            XCTAssertEqual(CC_SHA256_Init(&ctx), 1)
            message.withUnsafeBytes { bytes in
                XCTAssertEqual(CC_SHA256_Update(&ctx, bytes.baseAddress, CC_LONG(split)), 1)
                XCTAssertEqual(CC_SHA256_Update(&ctx, bytes.baseAddress! + split, CC_LONG(message.count - split)), 1)
            }
            var digest = [UInt8](repeating: 0, count: 32)
            XCTAssertEqual(CC_SHA256_Final(&digest, &ctx), 1)
            XCTAssertEqual(digest, whole256, "split at \(split)")

            var ctx512 = CC_SHA512_CTX()
            CC_SHA384_Init(&ctx512)
            for byte in message { var b = byte; CC_SHA384_Update(&ctx512, &b, 1) }
            var d384 = [UInt8](repeating: 0, count: 48)
            CC_SHA384_Final(&d384, &ctx512)
            XCTAssertEqual(d384, whole384)
        }
        var ctx1 = CC_SHA1_CTX()
        CC_SHA1_Init(&ctx1)
        CC_SHA1_Update(&ctx1, message, 100)
        message.withUnsafeBytes { _ = CC_SHA1_Update(&ctx1, $0.baseAddress! + 100, 200) }
        var d1 = [UInt8](repeating: 0, count: 20)
        CC_SHA1_Final(&d1, &ctx1)
        XCTAssertEqual(d1, whole1)

        var md5 = CC_MD5_CTX()
        CC_MD5_Init(&md5)
        CC_MD5_Update(&md5, "message ", 8)
        CC_MD5_Update(&md5, "digest", 6)
        var dm = [UInt8](repeating: 0, count: 16)
        CC_MD5_Final(&dm, &md5)
        XCTAssertEqual(hexString(dm), "f96b697d7cb7938d525a2f31aaf161d0")

        var ctx224 = CC_SHA256_CTX()
        CC_SHA224_Init(&ctx224)
        CC_SHA224_Update(&ctx224, "ab", 2)
        CC_SHA224_Update(&ctx224, "c", 1)
        var d224 = [UInt8](repeating: 0, count: 28)
        CC_SHA224_Final(&d224, &ctx224)
        XCTAssertEqual(d224, sha224(abc))
    }

    /// A copy of a running context forks it, as copying Apple's C struct does: the prefix digest
    /// of a stream can be taken without disturbing the stream.
    func testCopiedContextForksTheState() {
        var running = CC_SHA256_CTX()
        CC_SHA256_Init(&running)
        CC_SHA256_Update(&running, "ab", 2)
        var fork = running
        CC_SHA256_Update(&fork, "c", 1)
        var forked = [UInt8](repeating: 0, count: 32)
        CC_SHA256_Final(&forked, &fork)
        XCTAssertEqual(forked, sha256(abc))

        CC_SHA256_Update(&running, "x", 1)
        var rest = [UInt8](repeating: 0, count: 32)
        CC_SHA256_Final(&rest, &running)
        XCTAssertEqual(rest, sha256(Array("abx".utf8)))
    }

    /// C callers may hand `_Init` memory they allocated and never initialized.
    func testInitOnUninitializedMemory() {
        let ctx = UnsafeMutablePointer<CC_SHA1_CTX>.allocate(capacity: 1)
        defer { ctx.deallocate() }
        UnsafeMutableRawPointer(ctx).initializeMemory(as: UInt8.self, repeating: 0xA5, count: MemoryLayout<CC_SHA1_CTX>.size)
        XCTAssertEqual(CC_SHA1_Init(ctx), 1)
        CC_SHA1_Update(ctx, "abc", 3)
        var digest = [UInt8](repeating: 0, count: 20)
        XCTAssertEqual(CC_SHA1_Final(&digest, ctx), 1)
        XCTAssertEqual(digest, sha1(abc))
        ctx.deinitialize(count: 1)
    }

    /// `_Final` spends the context: updates and finals after it do nothing and say so (0), and
    /// a context never initialized does nothing either.
    func testSpentAndUnstartedContextsFail() {
        var ctx = CC_SHA512_CTX()
        XCTAssertEqual(CC_SHA512_Update(&ctx, "abc", 3), 0)
        var digest = [UInt8](repeating: 0xEE, count: 64)
        XCTAssertEqual(CC_SHA512_Final(&digest, &ctx), 0)
        XCTAssertEqual(digest, [UInt8](repeating: 0xEE, count: 64))
        CC_SHA512_Init(&ctx)
        CC_SHA512_Update(&ctx, "abc", 3)
        XCTAssertEqual(CC_SHA512_Final(&digest, &ctx), 1)
        XCTAssertEqual(digest, sha512(abc))
        XCTAssertEqual(CC_SHA512_Update(&ctx, "abc", 3), 0)
        XCTAssertEqual(CC_SHA512_Final(&digest, &ctx), 0)
    }

    func testEmptyInputWithNilPointer() {
        var digest = [UInt8](repeating: 0, count: 32)
        XCTAssertNotNil(CC_SHA256(nil, 0, &digest))
        XCTAssertEqual(hexString(digest), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    // One-shot helpers over the C-shaped calls.
    private func sha1(_ m: [UInt8]) -> [UInt8] { run(20) { CC_SHA1(m, CC_LONG(m.count), $0) } }
    private func sha224(_ m: [UInt8]) -> [UInt8] { run(28) { CC_SHA224(m, CC_LONG(m.count), $0) } }
    private func sha256(_ m: [UInt8]) -> [UInt8] { run(32) { CC_SHA256(m, CC_LONG(m.count), $0) } }
    private func sha384(_ m: [UInt8]) -> [UInt8] { run(48) { CC_SHA384(m, CC_LONG(m.count), $0) } }
    private func sha512(_ m: [UInt8]) -> [UInt8] { run(64) { CC_SHA512(m, CC_LONG(m.count), $0) } }

    private func run(_ count: Int, _ body: (UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8>?) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let returned = out.withUnsafeMutableBufferPointer { buffer in body(buffer.baseAddress!) == buffer.baseAddress! }
        XCTAssertTrue(returned, "the digest call returns its md pointer")
        return out
    }
}
