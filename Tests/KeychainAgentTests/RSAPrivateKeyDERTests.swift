@testable import KeychainAgent
import KeychainCrypto
import XCTest

/// The CRT exponents the agent computes for an RSA key from ssh-add, against machine arithmetic,
/// and the PKCS#1 DER it writes, byte for byte for a small key.
final class RSAPrivateKeyDERTests: XCTestCase {
    func bytes(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) } }

    func testRemaindersAgreeWithUInt64Arithmetic() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let a = UInt64.random(in: 0...UInt64.max, using: &generator)
            let m = UInt64.random(in: 3...UInt64(UInt32.max), using: &generator) | 1
            let r = try bytes(a).withUnsafeBytes { av in
                try Array(bytes(m).drop { $0 == 0 }).withUnsafeBytes { try RSAPrivateKeyDER.remainder(av, byOneLessThan: $0) }
            }
            let expected = a % (m - 1)
            XCTAssertEqual(r.withUnsafeBytes { $0.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }, expected, "\(a) mod \(m - 1)")
        }
        XCTAssertThrowsError(try [UInt8(1)].withUnsafeBytes { a in try [UInt8(4)].withUnsafeBytes { try RSAPrivateKeyDER.remainder(a, byOneLessThan: $0) } },
                             "an even prime")
        XCTAssertThrowsError(try [UInt8(1)].withUnsafeBytes { a in try [UInt8(1)].withUnsafeBytes { try RSAPrivateKeyDER.remainder(a, byOneLessThan: $0) } },
                             "1, whose predecessor is 0")
    }

    /// RSA's textbook key: p 61, q 53, n 3233, e 17, d 2753, dp 53, dq 49, qinv 38.
    func testTheTextbookKeyIsThePKCS1DEROpenSSLWrites() throws {
        let body: [UInt8] = [0x0A, 0xC1, 61, 53, 38]  // d (2753), p, q, iqmp
        let der = try body.withUnsafeBytes {
            try RSAPrivateKeyDER.encode(modulus: [0x0C, 0xA1], exponent: [17], body: $0, d: 0..<2, iqmp: 4..<5, p: 2..<3, q: 3..<4)
        }
        // openssl asn1parse of this SEQUENCE: version 0, n, e, d, p, q, dp, dq, qinv
        let expected: [UInt8] = [0x30, 0x1D, 0x02, 0x01, 0x00, 0x02, 0x02, 0x0C, 0xA1, 0x02, 0x01, 0x11, 0x02, 0x02, 0x0A, 0xC1,
                                 0x02, 0x01, 0x3D, 0x02, 0x01, 0x35, 0x02, 0x01, 0x35, 0x02, 0x01, 0x31, 0x02, 0x01, 0x26]
        XCTAssertEqual(der.withUnsafeBytes { Array($0) }, expected)
    }
}
