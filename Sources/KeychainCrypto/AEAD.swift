import CSodium

/// XChaCha20-Poly1305 (IETF) from libsodium. A sealed box is `nonce(24) || ciphertext || tag(16)`;
/// the 192-bit random nonce makes random nonces safe for any number of messages under one key.
public enum AEAD {
    public static let keyLength = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)   // 32
    public static let nonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES) // 24
    public static let tagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)      // 16
    /// Bytes a sealed box adds to its plaintext.
    public static let overhead = nonceLength + tagLength

    /// Encrypts with a fresh random nonce (`crypto_aead_xchacha20poly1305_ietf_encrypt`).
    public static func seal(_ plaintext: UnsafeRawBufferPointer, key: SecureBytes,
                            associatedData: [UInt8]) -> [UInt8] {
        seal(plaintext, key: key, associatedData: associatedData, nonce: randomBytes(nonceLength))
    }

    /// Encrypts a guarded buffer.
    public static func seal(_ plaintext: SecureBytes, key: SecureBytes, associatedData: [UInt8]) -> [UInt8] {
        plaintext.withUnsafeBytes { seal($0, key: key, associatedData: associatedData) }
    }

    /// Encrypts with a caller-chosen nonce; for known-answer tests only.
    public static func seal(_ plaintext: UnsafeRawBufferPointer, key: SecureBytes,
                            associatedData: [UInt8], nonce: [UInt8]) -> [UInt8] {
        Sodium.ensure()
        precondition(key.count == keyLength && nonce.count == nonceLength)
        var out = [UInt8](repeating: 0, count: nonceLength + plaintext.count + tagLength)
        out.replaceSubrange(0..<nonceLength, with: nonce)
        var written: UInt64 = 0
        let rc = out.withUnsafeMutableBufferPointer { o in
            key.withUnsafeBytes { k in
                associatedData.withUnsafeBufferPointer { ad in
                    crypto_aead_xchacha20poly1305_ietf_encrypt(
                        o.baseAddress! + nonceLength, &written,
                        plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                        ad.baseAddress, UInt64(ad.count), nil,
                        o.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        precondition(rc == 0 && Int(written) == plaintext.count + tagLength)
        return out
    }

    /// Decrypts a sealed box into guarded memory (`crypto_aead_xchacha20poly1305_ietf_decrypt`).
    /// - Throws: `CryptoError.malformedCiphertext` when too short,
    ///   `CryptoError.authenticationFailed` when the key, box or associated data do not match,
    ///   `CryptoError.allocationFailed` when no guarded memory is left for the plaintext.
    public static func open(_ box: [UInt8], key: SecureBytes, associatedData: [UInt8]) throws -> SecureBytes {
        try box.withUnsafeBytes { b in
            try associatedData.withUnsafeBytes { ad in try open(b, key: key, associatedData: ad) }
        }
    }

    /// The same for a box held elsewhere (an SQLite column, read in place).
    /// - Throws: as `open(_:key:associatedData:)` for arrays.
    public static func open(_ box: UnsafeRawBufferPointer, key: SecureBytes,
                            associatedData: UnsafeRawBufferPointer) throws -> SecureBytes {
        try key.withUnsafeBytes { try open(box, key: $0, associatedData: associatedData) }
    }

    /// The same with a key held in other guarded memory (a reader's scratch buffer).
    public static func open(_ box: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer,
                            associatedData: UnsafeRawBufferPointer) throws -> SecureBytes {
        guard key.count == keyLength else { throw CryptoError.invalidKeyLength }
        guard box.count >= overhead else { throw CryptoError.malformedCiphertext }
        let plain = try SecureBytes(count: box.count - overhead)
        do {
            try plain.withUnsafeMutableBytes { try open(box, key: key, associatedData: associatedData, into: $0) }
        } catch {
            plain.wipe()
            throw error
        }
        return plain
    }

    /// Decrypts a box into `plaintext`, which must be exactly `box.count - overhead` bytes of
    /// memory the caller guards and wipes (a guarded scratch buffer), with a key held anywhere
    /// guarded (`crypto_aead_xchacha20poly1305_ietf_decrypt`). On failure `plaintext` may hold
    /// anything: wipe it either way.
    /// - Throws: `CryptoError.invalidKeyLength`, `.malformedCiphertext` (too short, or a
    ///   plaintext buffer of another size), `.authenticationFailed`.
    public static func open(_ box: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer,
                            associatedData: UnsafeRawBufferPointer, into plaintext: UnsafeMutableRawBufferPointer) throws {
        Sodium.ensure()
        guard key.count == keyLength else { throw CryptoError.invalidKeyLength }
        guard box.count >= overhead, plaintext.count == box.count - overhead else { throw CryptoError.malformedCiphertext }
        var written: UInt64 = 0
        var empty: UInt8 = 0  // libsodium writes nothing for an empty plaintext, but takes a pointer
        let b = box.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let rc = withUnsafeMutablePointer(to: &empty) { e in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? e, &written, nil,
                b + nonceLength, UInt64(box.count - nonceLength),
                associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                b, key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard rc == 0 else { throw CryptoError.authenticationFailed }
    }
}
