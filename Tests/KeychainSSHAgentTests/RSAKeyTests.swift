import KeychainSSHAgent
import XCTest

/// RSA keys (RFC 4253 section 6.6) from the PKCS#1 form the vault keeps, and RFC 8332's choice of
/// hash by the request's flags; the expected blob is laid out by hand from the RFCs.
final class RSAKeyTests: XCTestCase {
    /// A 1024-bit modulus whose top bit is set (so its mpint needs a zero byte) and e = 65537.
    static let modulus: [UInt8] = [0xC1] + [UInt8](repeating: 0x5A, count: 126) + [0x0F]
    static let exponent: [UInt8] = [0x01, 0x00, 0x01]

    /// DER `RSAPublicKey`: SEQUENCE (long form, 0x8A bytes) { INTEGER 00 || n, INTEGER e }.
    static let pkcs1: [UInt8] = [0x30, 0x81, 0x89, 0x02, 0x81, 0x81, 0x00] + modulus + [0x02, 0x03] + exponent

    func testAPKCS1KeyBecomesTheSSHRSABlob() throws {
        let key = try SSHPublicKey(pkcs1RSAPublicKey: Self.pkcs1)
        XCTAssertEqual(key, .rsa(exponent: Self.exponent, modulus: Self.modulus))
        let expected: [UInt8] = [0, 0, 0, 7] + Array("ssh-rsa".utf8) + [0, 0, 0, 3] + Self.exponent
            + [0, 0, 0, 129, 0] + Self.modulus
        XCTAssertEqual(key.blob, expected)
        XCTAssertEqual(try SSHPublicKey(blob: key.blob), key, "a client's blob names the same key")
        XCTAssertTrue(key.openSSHLine(comment: "deploy").hasPrefix("ssh-rsa AAAAB3NzaC1yc2EAAAADAQAB"))
        XCTAssertTrue(key.openSSHLine(comment: "deploy").hasSuffix(" deploy"))
    }

    func testShortModuliAndBadDERAreRefused() {
        let short: [UInt8] = [0x30, 0x0A, 0x02, 0x03, 0x00, 0xC1, 0x01, 0x02, 0x03] + Self.exponent
        XCTAssertThrowsError(try SSHPublicKey(pkcs1RSAPublicKey: short), "a 16-bit modulus")
        XCTAssertThrowsError(try SSHPublicKey(pkcs1RSAPublicKey: Self.pkcs1 + [0]), "bytes after the sequence")
        XCTAssertThrowsError(try SSHPublicKey(pkcs1RSAPublicKey: Array(Self.pkcs1.dropLast())), "truncated")
        var negative = Self.pkcs1
        negative[6] = 0xFF  // the modulus' sign byte set: a negative INTEGER
        XCTAssertThrowsError(try SSHPublicKey(pkcs1RSAPublicKey: negative))
    }

    func testModuliOver16384BitsAndPrivateFieldsLongerThanTheModulusAreRefused() {
        var big = SSHWireWriter()
        big.writeText("ssh-rsa")
        big.writePositiveMPInt(Self.exponent)
        big.writePositiveMPInt([0xC1] + [UInt8](repeating: 1, count: 2048))  // 16,392 bits
        XCTAssertThrowsError(try SSHPublicKey(blob: big.bytes))

        // ADD_IDENTITY of this key with a d one byte longer than n: the work of storing it is bounded by n.
        var add = SSHWireWriter()
        add.writeText("ssh-rsa")
        for field in [Self.modulus, Self.exponent, [0x01] + Self.modulus, [3], [5], [7]] { add.writePositiveMPInt(field) }
        add.writeText("")
        XCTAssertThrowsError(try AddedIdentity.decode(add.bytes, constrained: false))
    }

    func testFlagsChooseSHA2AndNeverSHA1() {
        XCTAssertNil(RSASignatureAlgorithm(flags: []), "ssh-rsa (SHA-1) is refused")
        XCTAssertEqual(RSASignatureAlgorithm(flags: .rsaSHA2_256), .sha256)
        XCTAssertEqual(RSASignatureAlgorithm(flags: .rsaSHA2_512), .sha512)
        XCTAssertEqual(RSASignatureAlgorithm(flags: [.rsaSHA2_256, .rsaSHA2_512]), .sha256, "as OpenSSH's agent")
        let blob = SSHSignatureBlob.rsa([1, 2, 3], algorithm: .sha512)
        XCTAssertEqual(blob, [0, 0, 0, 12] + Array("rsa-sha2-512".utf8) + [0, 0, 0, 3, 1, 2, 3])
    }
}
