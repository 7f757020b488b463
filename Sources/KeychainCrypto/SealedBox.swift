import CSodium

/// Anonymous public-key encryption from libsodium (`crypto_box_seal`: X25519, XSalsa20-Poly1305
/// with an ephemeral sender key). Whoever holds the public key can seal; only the holder of the
/// secret key opens. A box is `ephemeral public key (32) || ciphertext || tag (16)`.
public enum SealedBox {
    public static let publicKeyLength = Int(crypto_box_PUBLICKEYBYTES)  // 32
    public static let secretKeyLength = Int(crypto_box_SECRETKEYBYTES)  // 32
    /// Bytes a box adds to its plaintext.
    public static let overhead = Int(crypto_box_sealbytes())             // 48

    /// A new key pair (`crypto_box_keypair`); the secret half in guarded memory.
    /// - Throws: `CryptoError.allocationFailed`.
    public static func keyPair() throws -> (publicKey: [UInt8], secretKey: SecureBytes) {
        try makeKeyPair(publicLength: publicKeyLength, secretLength: secretKeyLength, crypto_box_keypair)
    }

    /// The public half of a secret key (`crypto_scalarmult_base`).
    public static func publicKey(of secretKey: SecureBytes) throws -> [UInt8] {
        Sodium.ensure()
        guard secretKey.count == secretKeyLength else { throw CryptoError.invalidKeyLength }
        var pk = [UInt8](repeating: 0, count: publicKeyLength)
        let rc = secretKey.withUnsafeBytes { crypto_scalarmult_base(&pk, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        precondition(rc == 0)
        return pk
    }

    /// Seals `plaintext` to `publicKey` (`crypto_box_seal`).
    /// - Throws: `CryptoError.invalidKeyLength`, `CryptoError.authenticationFailed` for a public
    ///   key libsodium refuses (a low-order point).
    public static func seal(_ plaintext: SecureBytes, to publicKey: [UInt8]) throws -> [UInt8] {
        Sodium.ensure()
        guard publicKey.count == publicKeyLength else { throw CryptoError.invalidKeyLength }
        var out = [UInt8](repeating: 0, count: plaintext.count + overhead)
        let rc = plaintext.withUnsafeBytes { p in
            crypto_box_seal(&out, p.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(p.count), publicKey)
        }
        guard rc == 0 else { throw CryptoError.authenticationFailed }
        return out
    }

    /// Opens a box sealed to this key pair (never an empty plaintext) into guarded memory (`crypto_box_seal_open`).
    /// - Throws: `CryptoError.malformedCiphertext` when too short, `.authenticationFailed` when
    ///   the box was not sealed to this key or was changed, `.allocationFailed`.
    public static func open(_ box: [UInt8], publicKey: [UInt8], secretKey: SecureBytes) throws -> SecureBytes {
        Sodium.ensure()
        guard publicKey.count == publicKeyLength, secretKey.count == secretKeyLength else { throw CryptoError.invalidKeyLength }
        guard box.count > overhead else { throw CryptoError.malformedCiphertext }
        let plain = try SecureBytes(count: box.count - overhead)
        let rc = plain.withUnsafeMutableBytes { p in
            secretKey.withUnsafeBytes { s in
                crypto_box_seal_open(p.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                     box, UInt64(box.count), publicKey,
                                     s.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else { throw CryptoError.authenticationFailed }
        return plain
    }
}

/// A libsodium key pair made by `generate(public, secret)`, the secret half in guarded memory.
func makeKeyPair(publicLength: Int, secretLength: Int,
                 _ generate: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>) -> Int32) throws
    -> (publicKey: [UInt8], secretKey: SecureBytes) {
    Sodium.ensure()
    var pk = [UInt8](repeating: 0, count: publicLength)
    let sk = try SecureBytes(count: secretLength)
    let rc = pk.withUnsafeMutableBufferPointer { p in
        sk.withUnsafeMutableBytes { s in generate(p.baseAddress!, s.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
    }
    precondition(rc == 0)
    return (pk, sk)
}
