/// An ECDSA signature in SSH's encoding (RFC 5656 section 3.1.2): string key type, then a string
/// holding mpint r and mpint s. The daemon's SecKey signatures are DER `ECDSA-Sig-Value`s.
public enum SSHSignatureBlob {
    /// Re-encodes a DER signature from the daemon for `curve`.
    /// - Throws: `malformed` when `der` is not a SEQUENCE of two positive INTEGERs that fit the curve.
    public static func ecdsa(der: [UInt8], curve: ECDSACurve) throws -> [UInt8] {
        let (r, s) = try DERECDSASignature.integers(der)
        guard r.count <= curve.coordinateLength, s.count <= curve.coordinateLength, !r.isEmpty, !s.isEmpty else {
            throw SSHAgentCodecError.malformed("signature integers do not fit \(curve.rawValue)")
        }
        var inner = SSHWireWriter()
        inner.writePositiveMPInt(r)
        inner.writePositiveMPInt(s)
        var outer = SSHWireWriter()
        outer.writeText(curve.keyType)
        outer.writeString(inner.bytes)
        return outer.bytes
    }

    /// The type name and r and s (magnitudes) of an ECDSA signature blob.
    /// - Throws: `unsupportedKeyType`, `malformed`, `truncated` or `trailingBytes`.
    public static func decodeECDSA(_ blob: [UInt8]) throws -> (curve: ECDSACurve, r: [UInt8], s: [UInt8]) {
        var outer = SSHWireReader(blob)
        let keyType = try outer.readText()
        guard let curve = ECDSACurve(keyType: keyType) else { throw SSHAgentCodecError.unsupportedKeyType(keyType) }
        var inner = SSHWireReader(try outer.readString())
        try outer.expectEnd()
        let r = try inner.readPositiveMPInt()
        let s = try inner.readPositiveMPInt()
        try inner.expectEnd()
        return (curve, r, s)
    }
}

/// The two INTEGERs of an X9.62 `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` in DER,
/// read with definite lengths only and every length checked.
enum DERECDSASignature {
    static func integers(_ der: [UInt8]) throws -> (r: [UInt8], s: [UInt8]) {
        var offset = 0
        let sequence = try element(der, at: &offset, tag: 0x30)
        guard offset == der.count else { throw SSHAgentCodecError.malformed("bytes after the DER signature") }
        var inner = 0
        let r = try positiveInteger(try element(sequence, at: &inner, tag: 0x02))
        let s = try positiveInteger(try element(sequence, at: &inner, tag: 0x02))
        guard inner == sequence.count else { throw SSHAgentCodecError.malformed("bytes after s in the DER signature") }
        return (r, s)
    }

    /// The contents of the element at `offset` with `tag`; `offset` moves past it.
    private static func element(_ bytes: [UInt8], at offset: inout Int, tag: UInt8) throws -> [UInt8] {
        guard offset + 2 <= bytes.count, bytes[offset] == tag else { throw SSHAgentCodecError.malformed("DER tag") }
        var length = Int(bytes[offset + 1])
        offset += 2
        if length & 0x80 != 0 {
            // Long form; a signature of P-521 needs one length byte at most, two is a generous limit.
            let count = length & 0x7f
            guard (1...2).contains(count), offset + count <= bytes.count else { throw SSHAgentCodecError.malformed("DER length") }
            length = bytes[offset..<offset + count].reduce(0) { $0 << 8 | Int($1) }
            offset += count
        }
        guard length <= bytes.count - offset else { throw SSHAgentCodecError.malformed("DER element runs past the end") }
        defer { offset += length }
        return Array(bytes[offset..<offset + length])
    }

    /// The magnitude of a DER INTEGER that must be positive: its sign byte dropped.
    private static func positiveInteger(_ contents: [UInt8]) throws -> [UInt8] {
        guard let first = contents.first, first & 0x80 == 0 else { throw SSHAgentCodecError.malformed("DER integer is empty or negative") }
        return Array(contents.drop { $0 == 0 })
    }
}
