/// The NIST curves of RFC 5656, with the names SSH gives them and the hash each signs with.
public enum ECDSACurve: String, CaseIterable, Sendable {
    case p256 = "nistp256"
    case p384 = "nistp384"
    case p521 = "nistp521"

    /// The key and signature type name, e.g. `ecdsa-sha2-nistp256`.
    public var keyType: String { "ecdsa-sha2-" + rawValue }

    /// Bytes of one coordinate (and of r and s at most).
    public var coordinateLength: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        case .p521: 66
        }
    }

    /// The curve's size in bits, as a key's `kSecAttrKeySizeInBits`.
    public var bits: Int {
        switch self {
        case .p256: 256
        case .p384: 384
        case .p521: 521
        }
    }

    /// The digest RFC 5656 section 6.2.1 pairs with the curve: SHA-256, SHA-384, SHA-512.
    public var digestBits: Int {
        switch self {
        case .p256: 256
        case .p384: 384
        case .p521: 512
        }
    }

    public init?(keyType: String) {
        guard let curve = ECDSACurve.allCases.first(where: { $0.keyType == keyType }) else { return nil }
        self = curve
    }

    /// The curve of an uncompressed point (X9.63, `04 || X || Y`) from its length.
    public init?(uncompressedPointLength length: Int) {
        guard let curve = ECDSACurve.allCases.first(where: { 1 + 2 * $0.coordinateLength == length }) else { return nil }
        self = curve
    }
}
