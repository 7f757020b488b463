/// An ECDSA signature in SSH's encoding (RFC 5656 section 3.1.2): string key type, then a string
/// holding mpint r and mpint s. The daemon's SecKey signatures are DER `ECDSA-Sig-Value`s.
public enum SSHSignatureBlob {
    /// Re-encodes a DER signature from the daemon for `curve`.
    /// - Throws: `malformed` when `der` is not a SEQUENCE of two positive INTEGERs that fit the curve.
    public static func ecdsa(der: [UInt8], curve: ECDSACurve) throws -> [UInt8] {
        let (r, s) = try DERECDSASignature.integers(der)
        guard r.count <= curve.coordinateLength, s.count <= curve.coordinateLength else {
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

    /// An RSA signature (RFC 8332 section 3): string algorithm name, string the PKCS#1 v1.5
    /// signature, as long as the modulus.
    public static func rsa(_ signature: [UInt8], algorithm: RSASignatureAlgorithm) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.writeText(algorithm.rawValue)
        writer.writeString(signature)
        return writer.bytes
    }

    /// An Ed25519 signature (RFC 8709 section 6): string "ssh-ed25519", string the 64-byte signature.
    public static func ed25519(_ signature: [UInt8]) throws -> [UInt8] {
        guard signature.count == 64 else { throw SSHAgentCodecError.malformed("an Ed25519 signature is 64 bytes") }
        var writer = SSHWireWriter()
        writer.writeText("ssh-ed25519")
        writer.writeString(signature)
        return writer.bytes
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

/// The two INTEGERs of an X9.62 `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` in DER.
enum DERECDSASignature {
    static func integers(_ der: [UInt8]) throws -> (r: [UInt8], s: [UInt8]) {
        var sequence = try DERReader.sequence(der)
        let r = try sequence.positiveInteger()
        let s = try sequence.positiveInteger()
        guard sequence.isAtEnd else { throw SSHAgentCodecError.malformed("bytes after s in the DER signature") }
        return (r, s)
    }
}
