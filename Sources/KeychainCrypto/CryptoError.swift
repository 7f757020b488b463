/// Failures of the cryptographic primitives. Carries no key or plaintext material.
public enum CryptoError: Error, Equatable, Sendable {
    /// AEAD authentication failed: wrong key, tampered ciphertext or wrong associated data.
    case authenticationFailed
    /// A ciphertext too short to hold a nonce and a tag.
    case malformedCiphertext
    /// Argon2id could not run with these parameters (usually out of memory).
    case keyDerivationFailed
    /// A key of the wrong length.
    case invalidKeyLength
    /// Guarded memory could not be allocated: past `SecureBytes.budget`, or `sodium_malloc`
    /// failed (out of memory or memory mappings). Callers report `errSecAllocate`.
    case allocationFailed
}
