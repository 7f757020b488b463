import COpenSSL
import KeychainCrypto

/// AES-GCM with a 16-byte tag (`EVP_aes_*_gcm`), for ECIES.
enum AESGCM {
    static let tagLength = 16

    private static func cipher(_ key: UnsafeRawBufferPointer) throws -> OpaquePointer {
        switch key.count {
        case 16: return EVP_aes_128_gcm()
        case 32: return EVP_aes_256_gcm()
        default: throw KeyError.invalidInput
        }
    }

    /// `ciphertext || tag`.
    static func seal(key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer, _ plaintext: UnsafeRawBufferPointer) throws -> [UInt8] {
        let ctx = try LibCrypto.notNil(EVP_CIPHER_CTX_new())
        defer { EVP_CIPHER_CTX_free(ctx) }
        try LibCrypto.check(EVP_EncryptInit_ex(ctx, try cipher(key), nil, nil, nil))
        try LibCrypto.check(EVP_CIPHER_CTX_ctrl(ctx, kc_gcm_set_ivlen, Int32(iv.count), nil))
        try LibCrypto.check(EVP_EncryptInit_ex(ctx, nil, nil, bytes(key), bytes(iv)))
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var written: Int32 = 0
        if plaintext.count > 0 {
            try LibCrypto.check(EVP_EncryptUpdate(ctx, &out, &written, bytes(plaintext), Int32(plaintext.count)))
        }
        var tail: Int32 = 0
        try out.withUnsafeMutableBufferPointer { buffer in
            try LibCrypto.check(EVP_EncryptFinal_ex(ctx, buffer.baseAddress! + Int(written), &tail))
            try LibCrypto.check(EVP_CIPHER_CTX_ctrl(ctx, kc_gcm_get_tag, Int32(tagLength),
                                                    buffer.baseAddress! + plaintext.count))
        }
        return out
    }

    /// The plaintext of `ciphertext || tag`, in guarded memory.
    /// - Throws: `decryptionFailed` when the tag does not check.
    static func open(key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer, _ sealed: UnsafeRawBufferPointer) throws -> SecureBytes {
        guard sealed.count >= tagLength else { throw KeyError.decryptionFailed }
        let body = sealed.count - tagLength
        let ctx = try LibCrypto.notNil(EVP_CIPHER_CTX_new())
        defer { EVP_CIPHER_CTX_free(ctx) }
        try LibCrypto.check(EVP_DecryptInit_ex(ctx, try cipher(key), nil, nil, nil))
        try LibCrypto.check(EVP_CIPHER_CTX_ctrl(ctx, kc_gcm_set_ivlen, Int32(iv.count), nil))
        try LibCrypto.check(EVP_DecryptInit_ex(ctx, nil, nil, bytes(key), bytes(iv)))
        let out = try SecureBytes(count: body)
        try out.withUnsafeMutableBytes { raw in
            let dst = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            var written: Int32 = 0
            if body > 0 { try LibCrypto.check(EVP_DecryptUpdate(ctx, dst, &written, bytes(sealed), Int32(body))) }
            let tag = UnsafeMutableRawPointer(mutating: sealed.baseAddress! + body)
            try LibCrypto.check(EVP_CIPHER_CTX_ctrl(ctx, kc_gcm_set_tag, Int32(tagLength), tag))
            var tail: Int32 = 0
            var scratch = [UInt8](repeating: 0, count: 16)  // GCM writes nothing at the end
            let final = scratch.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(ctx, $0.baseAddress, &tail) }
            try LibCrypto.check(final, .decryptionFailed)
        }
        return out
    }

    private static func bytes(_ raw: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
        raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }
}
