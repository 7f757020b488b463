import KeychainSSHAgent
import XCTest

/// ECDSA key and signature blobs (RFC 5656), against bytes computed outside this code: the
/// P-256 base point as a key, and DER signatures with and without INTEGER sign bytes.
final class ECDSABlobTests: XCTestCase {
    static let p256G: [UInt8] = [0x04] + hex("6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296")
        + hex("4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5")

    func testAP256KeyIsTheAuthorizedKeysLineOpenSSHWrites() throws {
        let key = try SSHPublicKeyBlob(uncompressedPoint: Self.p256G)
        // Computed with Python's struct and base64 from the RFC 5656 layout.
        XCTAssertEqual(key.openSSHLine, "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBGsX0fLhLEJH"
                       + "+Lzm5WOkQPJ3A32BLeszoPShOUXYmMKWT+NC4v4af5uO5+tKfA+eFivOM1drMV7Oy7ZAaDe/UfU=")
        XCTAssertEqual(try SSHPublicKeyBlob(blob: key.blob), key)
    }

    func testEachCurveIsKnownByItsPointLength() throws {
        for curve in ECDSACurve.allCases {
            let point = [0x04] + [UInt8](repeating: 1, count: 2 * curve.coordinateLength)
            let key = try SSHPublicKeyBlob(uncompressedPoint: point)
            XCTAssertEqual(key.curve, curve)
            XCTAssertEqual(try SSHPublicKeyBlob(blob: key.blob).curve, curve)
        }
        XCTAssertThrowsError(try SSHPublicKeyBlob(uncompressedPoint: [0x02] + [UInt8](repeating: 1, count: 32)), "compressed point")
        XCTAssertThrowsError(try SSHPublicKeyBlob(uncompressedPoint: [0x04, 1, 2]))
    }

    func testAKeyBlobWhoseNamesDisagreeIsRefused() throws {
        var writer = SSHWireWriter()
        writer.writeText("ecdsa-sha2-nistp256")
        writer.writeText("nistp384")
        writer.writeString(Self.p256G)
        XCTAssertThrowsError(try SSHPublicKeyBlob(blob: writer.bytes))
        var ed25519 = SSHWireWriter()
        ed25519.writeText("ssh-ed25519")
        ed25519.writeString([UInt8](repeating: 0, count: 32))
        XCTAssertThrowsError(try SSHPublicKeyBlob(blob: ed25519.bytes)) {
            XCTAssertEqual($0 as? SSHAgentCodecError, .unsupportedKeyType("ssh-ed25519"))
        }
    }

    func testADERSignatureBecomesTwoMPInts() throws {
        // r has DER's sign byte (00 80...), s is short: SSH keeps r's zero byte, as an mpint needs.
        let r: [UInt8] = [0x00, 0x80] + [UInt8](repeating: 0x11, count: 31)
        let s: [UInt8] = [0x05]
        let der: [UInt8] = [0x30, UInt8(2 + r.count + 2 + s.count), 0x02, UInt8(r.count)] + r + [0x02, UInt8(s.count)] + s
        let blob = try SSHSignatureBlob.ecdsa(der: der, curve: .p256)
        let inner: [UInt8] = [0, 0, 0, 33] + r + [0, 0, 0, 1, 0x05]
        XCTAssertEqual(blob, [0, 0, 0, 19] + Array("ecdsa-sha2-nistp256".utf8) + [0, 0, 0, UInt8(inner.count)] + inner)
        let decoded = try SSHSignatureBlob.decodeECDSA(blob)
        XCTAssertEqual(decoded.curve, .p256)
        XCTAssertEqual(decoded.r, Array(r.dropFirst()))
        XCTAssertEqual(decoded.s, s)
    }

    func testAP521SignatureUsesTheLongDERLengthForm() throws {
        let r = [UInt8](repeating: 0x01, count: 66), s = [UInt8](repeating: 0x01, count: 65)
        let body: [UInt8] = [0x02, 66] + r + [0x02, 65] + s
        let der: [UInt8] = [0x30, 0x81, UInt8(body.count)] + body
        let decoded = try SSHSignatureBlob.decodeECDSA(try SSHSignatureBlob.ecdsa(der: der, curve: .p521))
        XCTAssertEqual(decoded.r, r)
        XCTAssertEqual(decoded.s, s)
        XCTAssertThrowsError(try SSHSignatureBlob.ecdsa(der: der, curve: .p256), "66-byte integers do not fit P-256")
    }

    func testMalformedDERIsRefused() {
        let good: [UInt8] = [0x30, 6, 0x02, 1, 0x01, 0x02, 1, 0x02]
        XCTAssertNoThrow(try SSHSignatureBlob.ecdsa(der: good, curve: .p256))
        for length in 0..<good.count {
            XCTAssertThrowsError(try SSHSignatureBlob.ecdsa(der: Array(good[0..<length]), curve: .p256), "prefix of \(length)")
        }
        XCTAssertThrowsError(try SSHSignatureBlob.ecdsa(der: good + [0], curve: .p256), "trailing byte")
        XCTAssertThrowsError(try SSHSignatureBlob.ecdsa(der: [0x30, 6, 0x02, 1, 0x81, 0x02, 1, 0x02], curve: .p256), "negative r")
        XCTAssertThrowsError(try SSHSignatureBlob.ecdsa(der: [0x30, 0x84, 0xff, 0xff, 0xff, 0xff], curve: .p256), "huge length")
    }
}

func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
