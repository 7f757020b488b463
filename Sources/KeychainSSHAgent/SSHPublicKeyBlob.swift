/// An ECDSA public key in SSH's encoding (RFC 5656 section 3.1): string key type, string curve
/// name, string Q, where Q is the uncompressed point SecKeyCopyExternalRepresentation returns.
public struct SSHPublicKeyBlob: Equatable, Sendable {
    public let curve: ECDSACurve
    /// `04 || X || Y`.
    public let point: [UInt8]

    /// - Throws: `malformed` when `point` is not an uncompressed point of a NIST curve.
    public init(uncompressedPoint point: [UInt8]) throws {
        guard point.first == 0x04, let curve = ECDSACurve(uncompressedPointLength: point.count) else {
            throw SSHAgentCodecError.malformed("not an uncompressed P-256, P-384 or P-521 point")
        }
        self.curve = curve
        self.point = point
    }

    /// Decodes a key blob as a client sends it in SIGN_REQUEST.
    /// - Throws: `unsupportedKeyType` for a type other than ECDSA; `malformed` when the curve
    ///   name disagrees with the type or the point is not the curve's; `truncated`/`trailingBytes`.
    public init(blob: [UInt8]) throws {
        var reader = SSHWireReader(blob)
        let keyType = try reader.readText()
        guard let curve = ECDSACurve(keyType: keyType) else { throw SSHAgentCodecError.unsupportedKeyType(keyType) }
        guard try reader.readText() == curve.rawValue else { throw SSHAgentCodecError.malformed("curve name does not match \(keyType)") }
        let point = try reader.readString()
        try reader.expectEnd()
        try self.init(uncompressedPoint: point)
        guard self.curve == curve else { throw SSHAgentCodecError.malformed("point is not on \(curve.rawValue)'s size") }
    }

    public var blob: [UInt8] {
        var writer = SSHWireWriter()
        writer.writeText(curve.keyType)
        writer.writeText(curve.rawValue)
        writer.writeString(point)
        return writer.bytes
    }

    /// The `authorized_keys` form without a comment: `ecdsa-sha2-nistp256 AAAA...`.
    public var openSSHLine: String { curve.keyType + " " + Base64.encode(blob) }
}
