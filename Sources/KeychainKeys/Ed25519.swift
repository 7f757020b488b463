import COpenSSL
import KeychainCrypto

/// Ed25519 keys (RFC 8032) in their raw forms, as OpenSSH and most libraries keep them: a private
/// key is its 32-byte seed, a public key its 32-byte encoded point. libcrypto holds the seed on
/// its secure heap.
extension AsymmetricKey {
    /// The `kSecAttrKeyType` code Ed25519 keys are stored under. Apple has none (CryptoKit keeps
    /// Curve25519 out of SecKey), so this is CSSM_ALGID_VENDOR_DEFINED (0x80000000) + 25519,
    /// a code no Apple key type uses.
    public static let ed25519TypeCode: Int64 = 0x8000_0000 + 25519

    /// Bytes of an Ed25519 seed, and of a public key.
    static let ed25519Length = 32

    /// A new Ed25519 key pair (`EVP_PKEY_generate`).
    public static func generateEd25519() throws -> AsymmetricKey {
        _ = LibCrypto.ready
        return try LibCrypto.withContext(named: "ED25519") { ctx in
            try LibCrypto.check(EVP_PKEY_keygen_init(ctx))
            var out: OpaquePointer?
            try LibCrypto.check(EVP_PKEY_generate(ctx, &out))
            return AsymmetricKey(try LibCrypto.notNil(out), kind: .ed25519, isPrivate: true)
        }
    }

    /// An Ed25519 key from raw bytes: 32 for a public key; for a private key the 32-byte seed,
    /// or the seed followed by its public key (64 bytes, libsodium's and OpenSSH's form), whose
    /// public half must then be the seed's.
    /// - Throws: `invalidKeyData`.
    public static func ed25519(_ bytes: UnsafeRawBufferPointer, isPrivate: Bool) throws -> AsymmetricKey {
        _ = LibCrypto.ready
        let n = ed25519Length
        guard let base = bytes.baseAddress, bytes.count == n || (isPrivate && bytes.count == 2 * n) else {
            throw KeyError.invalidKeyData
        }
        let start = base.assumingMemoryBound(to: UInt8.self)
        let made = isPrivate
            ? EVP_PKEY_new_raw_private_key(kc_pkey_ed25519, nil, start, n)
            : EVP_PKEY_new_raw_public_key(kc_pkey_ed25519, nil, start, n)
        let key = AsymmetricKey(try LibCrypto.notNil(made, .invalidKeyData), kind: .ed25519, isPrivate: isPrivate)
        if bytes.count == 2 * n, !key.publicBytes().elementsEqual(UnsafeRawBufferPointer(rebasing: bytes[n...])) {
            throw KeyError.invalidKeyData
        }
        return key
    }

    /// The 32-byte public key (`EVP_PKEY_get_raw_public_key`).
    func ed25519PublicBytes() -> [UInt8] {
        var length = Self.ed25519Length
        var out = [UInt8](repeating: 0, count: length)
        let ok = EVP_PKEY_get_raw_public_key(pkey, &out, &length)
        precondition(ok == 1 && length == out.count, "Ed25519 public key could not be read")
        return out
    }

    /// The 32-byte seed, read straight into guarded memory (`EVP_PKEY_get_raw_private_key`).
    func ed25519Seed() throws -> SecureBytes {
        let out = try SecureBytes(count: Self.ed25519Length)
        var length = Self.ed25519Length
        let ok = out.withUnsafeMutableBytes { raw in
            EVP_PKEY_get_raw_private_key(pkey, raw.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
        }
        guard ok == 1, length == Self.ed25519Length else {
            out.wipe()
            ERR_clear_error()
            throw KeyError.library
        }
        return out
    }

    // MARK: Signatures

    /// Signs `message` whole with Ed25519: the scheme hashes the message itself (RFC 8032
    /// 5.1.6), so no digest is named (one-shot `EVP_DigestSign`). The 64-byte signature is the
    /// same every time for one key and message.
    /// - Throws: `unsupported` for a public key or a key of another kind.
    public func sign(message: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard kind == .ed25519, isPrivate else { throw KeyError.unsupported }
        return try LibCrypto.withDigestContext { ctx in
            try LibCrypto.check(EVP_DigestSignInit(ctx, nil, nil, nil, pkey))
            var length = 0
            let input = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
            try LibCrypto.check(EVP_DigestSign(ctx, nil, &length, input, message.count))
            var signature = [UInt8](repeating: 0, count: length)
            try LibCrypto.check(EVP_DigestSign(ctx, &signature, &length, input, message.count))
            return Array(signature.prefix(length))
        }
    }

    /// Checks an Ed25519 `signature` over the whole `message` (`EVP_DigestVerify`) with this key
    /// or its public half.
    /// - Returns: false for a signature that does not verify, including a malformed one.
    /// - Throws: `unsupported` for a key of another kind.
    public func verify(signature: [UInt8], message: UnsafeRawBufferPointer) throws -> Bool {
        guard kind == .ed25519 else { throw KeyError.unsupported }
        return try LibCrypto.withDigestContext { ctx in
            try LibCrypto.check(EVP_DigestVerifyInit(ctx, nil, nil, nil, pkey))
            let input = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let result = EVP_DigestVerify(ctx, signature, signature.count, input, message.count)
            ERR_clear_error()
            return result == 1
        }
    }
}
