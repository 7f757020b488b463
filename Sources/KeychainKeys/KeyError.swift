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
}
