import COpenSSL
import KeychainCrypto

/// The freedesktop Secret Service's `dh-ietf1024-sha256-aes128-cbc-pkcs7` session: Diffie-Hellman
/// in RFC 2409's 1024-bit group (generator 2, `BN_get_rfc2409_prime_1024`), the shared value as
/// 128 big-endian bytes through HKDF-SHA256 (no salt, no info) to a 16-byte key, and secrets in
/// AES-128-CBC with PKCS#7 padding under a fresh 16-byte IV each.
public final class DHAES128Session {
    /// This side's public value, 128 big-endian bytes, for the peer.
    public let publicKey: [UInt8]
    private let key: SecureBytes

    static let groupBytes = 128

    /// Answers a peer's public value.
    /// - Throws: `invalidInput` for a value outside 2 ... p-2, `library` when libcrypto fails.
    public init(peerPublic: [UInt8]) throws {
        _ = LibCrypto.ready
        let ctx = try LibCrypto.notNil(BN_CTX_secure_new())
        defer { BN_CTX_free(ctx) }
        let p = try LibCrypto.notNil(BN_get_rfc2409_prime_1024(nil))
        defer { BN_free(p) }
        let g = try LibCrypto.notNil(BN_new())
        defer { BN_free(g) }
        try LibCrypto.check(BN_set_word(g, 2))
        let peer = try LibCrypto.notNil(BN_bin2bn(peerPublic, Int32(peerPublic.count), nil))
        defer { BN_free(peer) }
        // A peer value of 0, 1 or p-1 would force the shared value; refuse it.
        let limit = try LibCrypto.notNil(BN_dup(p))
        defer { BN_free(limit) }
        try LibCrypto.check(BN_sub_word(limit, 1))
        guard BN_cmp(peer, g) >= 0, BN_cmp(peer, limit) < 0 else { throw KeyError.invalidInput }

        let x = try LibCrypto.notNil(BN_secure_new())
        defer { BN_clear_free(x) }
        try LibCrypto.check(BN_priv_rand_range(x, limit))
        let y = try LibCrypto.notNil(BN_new())
        defer { BN_free(y) }
        try LibCrypto.check(BN_mod_exp(y, g, x, p, ctx))
        var mine = [UInt8](repeating: 0, count: Self.groupBytes)
        guard BN_bn2binpad(y, &mine, Int32(Self.groupBytes)) == Int32(Self.groupBytes) else { throw KeyError.library }
        publicKey = mine

        let z = try LibCrypto.notNil(BN_secure_new())
        defer { BN_clear_free(z) }
        try LibCrypto.check(BN_mod_exp(z, peer, x, p, ctx))
        let shared = try SecureBytes(count: Self.groupBytes)
        let written = shared.withUnsafeMutableBytes {
            BN_bn2binpad(z, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(Self.groupBytes))
        }
        guard written == Int32(Self.groupBytes) else { throw KeyError.library }
        key = try Self.hkdfSHA256(shared, count: 16)
    }

    /// HKDF-SHA256 with no salt and no info (libcrypto's `HKDF`).
    static func hkdfSHA256(_ secret: SecureBytes, count: Int) throws -> SecureBytes {
        let kdf = try LibCrypto.notNil(EVP_KDF_fetch(nil, "HKDF", nil))
        defer { EVP_KDF_free(kdf) }
        let ctx = try LibCrypto.notNil(EVP_KDF_CTX_new(kdf))
        defer { EVP_KDF_CTX_free(ctx) }
        let out = try SecureBytes(count: count)
        var digestName = Array("SHA256".utf8CString)
        let result: Int32 = digestName.withUnsafeMutableBufferPointer { name in
            secret.withUnsafeBytes { ikm in
                var params = [
                    OSSL_PARAM_construct_utf8_string(kc_param_digest, name.baseAddress, 0),
                    OSSL_PARAM_construct_octet_string(kc_param_key, UnsafeMutableRawPointer(mutating: ikm.baseAddress), ikm.count),
                    OSSL_PARAM_construct_end(),
                ]
                return out.withUnsafeMutableBytes { EVP_KDF_derive(ctx, $0.baseAddress, count, &params) }
            }
        }
        try LibCrypto.check(result)
        return out
    }

    /// Encrypts a secret for the peer: a fresh IV and the ciphertext.
    public func seal(_ plaintext: UnsafeRawBufferPointer) throws -> (iv: [UInt8], ciphertext: [UInt8]) {
        let iv = try SecureBytes.random(count: 16).withUnsafeBytes { Array($0) }  // libsodium's randombytes
        let ctx = try LibCrypto.notNil(EVP_CIPHER_CTX_new())
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: Int32 = 0, tail: Int32 = 0
        try key.withUnsafeBytes { k in
            try LibCrypto.check(EVP_EncryptInit_ex(ctx, EVP_aes_128_cbc(), nil, k.baseAddress?.assumingMemoryBound(to: UInt8.self), iv))
        }
        if plaintext.count > 0 {
            try LibCrypto.check(EVP_EncryptUpdate(ctx, &out, &written, plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                                  Int32(plaintext.count)))
        }
        try out.withUnsafeMutableBufferPointer { try LibCrypto.check(EVP_EncryptFinal_ex(ctx, $0.baseAddress! + Int(written), &tail)) }
        return (iv, Array(out[0..<Int(written + tail)]))
    }

    /// Decrypts a secret from the peer into guarded memory.
    /// - Throws: `decryptionFailed` for a wrong IV length, length or padding.
    public func open(iv: UnsafeRawBufferPointer, _ ciphertext: UnsafeRawBufferPointer) throws -> SecureBytes {
        guard iv.count == 16, ciphertext.count > 0, ciphertext.count % 16 == 0 else { throw KeyError.decryptionFailed }
        let ctx = try LibCrypto.notNil(EVP_CIPHER_CTX_new())
        defer { EVP_CIPHER_CTX_free(ctx) }
        try key.withUnsafeBytes { k in
            try LibCrypto.check(EVP_DecryptInit_ex(ctx, EVP_aes_128_cbc(), nil, k.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                                   iv.baseAddress?.assumingMemoryBound(to: UInt8.self)))
        }
        let out = try SecureBytes(count: ciphertext.count)
        let length: Int = try out.withUnsafeMutableBytes { raw in
            let dst = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var written: Int32 = 0, tail: Int32 = 0
            try LibCrypto.check(EVP_DecryptUpdate(ctx, dst, &written, ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                                  Int32(ciphertext.count)), .decryptionFailed)
            try LibCrypto.check(EVP_DecryptFinal_ex(ctx, dst + Int(written), &tail), .decryptionFailed)
            return Int(written + tail)
        }
        return try out.slice(0..<length)
    }
}
