import COpenSSL
import KeychainCrypto

// Raw RSA (RFC 8017 5.1 RSAEP/RSADP, 5.2 RSASP1/RSAVP1): the bare modular exponentiation,
// as Apple's `rsaEncryptionRaw` and `rsaSignatureRaw` algorithms run it. The input is a
// big-endian number of at most the modulus length, taken with leading zeros to that length, and
// must be less than the modulus; the output is always the modulus length (Apple's
// `SecKeyAlgorithmAdaptorCopyBigEndianToCCUnit` and `SecRSA*KeyCopyOperationResult`).

extension AsymmetricKey {
    /// The public operation `input^e mod n` (`EVP_PKEY_encrypt`, `RSA_NO_PADDING`): raw
    /// encryption, or the recovery of what a raw signature signed.
    /// - Throws: `unsupported` for a key that is not RSA; `invalidInput` for an input longer
    ///   than the modulus or not less than it.
    public func rawPublic(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard kind == .rsa else { throw KeyError.unsupported }
        // The input may be a plaintext (raw encryption, a session key): wiped after use.
        var block = try modulusBlock(input)
        defer { wipeBytes(&block) }
        return try LibCrypto.withContext(pkey) { ctx in
            try LibCrypto.check(EVP_PKEY_encrypt_init(ctx))
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_NO_PADDING))
            var length = modulusBytes
            var out = [UInt8](repeating: 0, count: length)
            // libcrypto refuses a number not less than the modulus (RSA_R_DATA_TOO_LARGE_FOR_MODULUS).
            try LibCrypto.check(EVP_PKEY_encrypt(ctx, &out, &length, block, block.count), .invalidInput)
            guard length == modulusBytes else { throw KeyError.library }
            return out
        }
    }

    /// The private operation `input^d mod n` (`EVP_PKEY_decrypt`, `RSA_NO_PADDING`, blinded):
    /// raw decryption or a raw signature, into guarded memory.
    /// - Throws: `unsupported` for a public or non-RSA key; `invalidInput` for an input longer
    ///   than the modulus or not less than it.
    public func rawPrivate(_ input: UnsafeRawBufferPointer) throws -> SecureBytes {
        guard kind == .rsa, isPrivate else { throw KeyError.unsupported }
        // The input may be a plaintext (raw encryption, a session key): wiped after use.
        var block = try modulusBlock(input)
        defer { wipeBytes(&block) }
        return try LibCrypto.withContext(pkey) { ctx in
            try LibCrypto.check(EVP_PKEY_decrypt_init(ctx))
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_NO_PADDING))
            let out = try SecureBytes(count: modulusBytes)
            var length = modulusBytes
            let result = out.withUnsafeMutableBytes {
                EVP_PKEY_decrypt(ctx, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), &length, block, block.count)
            }
            try LibCrypto.check(result, .invalidInput)
            guard length == modulusBytes else { throw KeyError.library }
            return out
        }
    }

    /// `input` as a number of exactly the modulus length (leading zeros added), as libcrypto's
    /// `RSA_NO_PADDING` takes it.
    private func modulusBlock(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard input.count <= modulusBytes else { throw KeyError.invalidInput }
        var block = [UInt8](repeating: 0, count: modulusBytes - input.count)
        block.append(contentsOf: input)
        return block
    }
}
