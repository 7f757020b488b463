import COpenSSL
import KeychainCrypto

/// RSA encryption schemes (RFC 8017 7).
public enum RSAEncryptionPadding: Equatable, Sendable {
    /// RSAES-PKCS1-v1_5.
    case pkcs1
    /// RSAES-OAEP with MGF1 of the same digest and an empty label.
    case oaep(DigestAlgorithm)
}

extension AsymmetricKey {
    /// The RSA modulus length in bytes: the ciphertext and signature length.
    public var modulusBytes: Int { (sizeInBits + 7) / 8 }

    /// The longest plaintext `padding` can take with this key.
    public func maximumPlaintext(_ padding: RSAEncryptionPadding) -> Int {
        switch padding {
        case .pkcs1: return modulusBytes - 11
        case .oaep(let hash): return modulusBytes - 2 * hash.length - 2
        }
    }

    /// Encrypts with this RSA key's public half (`EVP_PKEY_encrypt`).
    /// - Throws: `unsupported` for an EC key, `invalidInput` for a plaintext too long.
    public func encrypt(_ plaintext: UnsafeRawBufferPointer, padding: RSAEncryptionPadding) throws -> [UInt8] {
        guard kind == .rsa else { throw KeyError.unsupported }
        guard plaintext.count <= maximumPlaintext(padding) else { throw KeyError.invalidInput }
        return try LibCrypto.withContext(pkey) { ctx in
            try LibCrypto.check(EVP_PKEY_encrypt_init(ctx))
            try configure(ctx, padding)
            var length = modulusBytes
            var out = [UInt8](repeating: 0, count: length)
            let input = plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self)
            try LibCrypto.check(EVP_PKEY_encrypt(ctx, &out, &length, input, plaintext.count), .invalidInput)
            return Array(out.prefix(length))
        }
    }

    /// Decrypts with this private RSA key (`EVP_PKEY_decrypt`) into guarded memory.
    /// - Throws: `unsupported` for a public or EC key, `invalidInput` for a ciphertext whose
    ///   length is not the modulus length, `decryptionFailed` when the padding does not check.
    public func decrypt(_ ciphertext: UnsafeRawBufferPointer, padding: RSAEncryptionPadding) throws -> SecureBytes {
        guard kind == .rsa, isPrivate else { throw KeyError.unsupported }
        guard ciphertext.count == modulusBytes else { throw KeyError.invalidInput }
        return try LibCrypto.withContext(pkey) { ctx in
            try LibCrypto.check(EVP_PKEY_decrypt_init(ctx))
            try configure(ctx, padding)
            let buffer = try SecureBytes(count: modulusBytes)
            var length = modulusBytes
            let input = ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let result = buffer.withUnsafeMutableBytes {
                EVP_PKEY_decrypt(ctx, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), &length, input, ciphertext.count)
            }
            try LibCrypto.check(result, .decryptionFailed)
            return try buffer.slice(0..<length)
        }
    }

    private func configure(_ ctx: OpaquePointer, _ padding: RSAEncryptionPadding) throws {
        switch padding {
        case .pkcs1:
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING))
        case .oaep(let hash):
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING))
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_oaep_md(ctx, hash.md))
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, hash.md))
        }
    }
}
