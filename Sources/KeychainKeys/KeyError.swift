/// Why a key operation failed. The Security module turns each into Apple's status.
public enum KeyError: Error, Equatable, Sendable {
    /// Bytes that are not a key of the kind named (wrong length, not on the curve, bad DER).
    case invalidKeyData
    /// Input the operation cannot take: a digest of the wrong length, a message too long for
    /// the RSA padding, a size out of range.
    case invalidInput
    /// A key kind, size or algorithm this library does not offer.
    case unsupported
    /// A signature that does not verify.
    case verificationFailed
    /// A ciphertext that does not decrypt (bad padding, wrong key, failed authentication tag).
    case decryptionFailed
    /// libcrypto failed for a reason it did not name (out of memory, usually).
    case library

    /// Apple's status for the failure (the daemon and the Security module answer with it) and
    /// a reason to show with it.
    public var appleStatus: (status: Int32, reason: String) {
        switch self {
        case .invalidKeyData: return (-50, "the data is not a key of this type")                    // errSecParam
        case .invalidInput: return (-50, "input of the wrong size for this key and algorithm")
        case .unsupported: return (-4, "not supported by this key")                                // errSecUnimplemented
        case .verificationFailed: return (-67808, "the signature does not verify")                 // errSecVerifyFailed
        case .decryptionFailed: return (-50, "the data does not decrypt with this key")
        case .library: return (-26276, "libcrypto failed")                                         // errSecInternalComponent
        }
    }
}
