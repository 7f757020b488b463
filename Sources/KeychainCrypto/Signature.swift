import CSodium

/// Ed25519 detached signatures from libsodium (`crypto_sign_detached`).
public enum Signature {
    public static let publicKeyLength = Int(crypto_sign_PUBLICKEYBYTES)  // 32
    /// libsodium's secret key: the 32-byte seed followed by the public key.
    public static let secretKeyLength = Int(crypto_sign_SECRETKEYBYTES)  // 64
    public static let length = Int(crypto_sign_BYTES)                    // 64

    /// A new key pair (`crypto_sign_keypair`); the secret half in guarded memory.
    /// - Throws: `CryptoError.allocationFailed`.
    public static func keyPair() throws -> (publicKey: [UInt8], secretKey: SecureBytes) {
        try makeKeyPair(publicLength: publicKeyLength, secretLength: secretKeyLength, crypto_sign_keypair)
    }

    /// The public half of a secret key (`crypto_sign_ed25519_sk_to_pk`).
    public static func publicKey(of secretKey: SecureBytes) throws -> [UInt8] {
        Sodium.ensure()
        guard secretKey.count == secretKeyLength else { throw CryptoError.invalidKeyLength }
        var pk = [UInt8](repeating: 0, count: publicKeyLength)
        let rc = secretKey.withUnsafeBytes { crypto_sign_ed25519_sk_to_pk(&pk, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        precondition(rc == 0)
        return pk
    }

    /// Signs `message` (`crypto_sign_detached`). - Throws: `CryptoError.invalidKeyLength`.
    public static func sign(_ message: [UInt8], secretKey: SecureBytes) throws -> [UInt8] {
        Sodium.ensure()
        guard secretKey.count == secretKeyLength else { throw CryptoError.invalidKeyLength }
        var sig = [UInt8](repeating: 0, count: length)
        let rc = secretKey.withUnsafeBytes { s in
            crypto_sign_detached(&sig, nil, message, UInt64(message.count), s.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        precondition(rc == 0)
        return sig
    }

    /// Whether `signature` is `publicKey`'s over `message` (`crypto_sign_verify_detached`).
    public static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        Sodium.ensure()
        guard signature.count == length, publicKey.count == publicKeyLength else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }
}
