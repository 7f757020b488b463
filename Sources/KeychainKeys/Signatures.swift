import COpenSSL

/// How a digest is signed.
public enum SignatureScheme: Equatable, Sendable {
    /// ECDSA; the signature is the DER `ECDSA-Sig-Value` of ANSI X9.62.
    case ecdsaX962
    /// RSASSA-PKCS1-v1_5 (RFC 8017 8.2). With a digest named, the digest is wrapped in its
    /// `DigestInfo`; without one, the input is taken as an encoded `DigestInfo` already.
    case pkcs1v15
    /// RSASSA-PSS (RFC 8017 8.1) with MGF1 of the same digest and a salt as long as the digest,
    /// as Apple's `rsaSignature…PSSSHA*` algorithms (`digest-PSS:SHA256:SHA256:32`).
    case pss
}

extension AsymmetricKey {
    /// Signs `digest` (`EVP_PKEY_sign`).
    /// - Parameter hash: the digest `digest` came from; required for PSS.
    /// - Throws: `unsupported` for a public key or a scheme of the other key kind,
    ///   `invalidInput` for a digest the scheme or key size cannot take.
    public func sign(digest: [UInt8], hash: DigestAlgorithm?, scheme: SignatureScheme) throws -> [UInt8] {
        guard isPrivate else { throw KeyError.unsupported }
        return try LibCrypto.withContext(pkey) { ctx in
            try LibCrypto.check(EVP_PKEY_sign_init(ctx))
            try configure(ctx, hash: hash, scheme: scheme)
            var length = 0
            try LibCrypto.check(EVP_PKEY_sign(ctx, nil, &length, digest, digest.count), .invalidInput)
            var signature = [UInt8](repeating: 0, count: length)
            try LibCrypto.check(EVP_PKEY_sign(ctx, &signature, &length, digest, digest.count), .invalidInput)
            return Array(signature.prefix(length))
        }
    }

    /// Checks `signature` over `digest` (`EVP_PKEY_verify`) with this key or its public half.
    /// - Returns: false for a signature that does not verify, including a malformed one.
    /// - Throws: `unsupported` for a scheme of the other key kind.
    public func verify(signature: [UInt8], digest: [UInt8], hash: DigestAlgorithm?, scheme: SignatureScheme) throws -> Bool {
        try LibCrypto.withContext(pkey) { ctx in
            try LibCrypto.check(EVP_PKEY_verify_init(ctx))
            try configure(ctx, hash: hash, scheme: scheme)
            let result = EVP_PKEY_verify(ctx, signature, signature.count, digest, digest.count)
            ERR_clear_error()
            return result == 1
        }
    }

    private func configure(_ ctx: OpaquePointer, hash: DigestAlgorithm?, scheme: SignatureScheme) throws {
        switch (kind, scheme) {
        case (.ec, .ecdsaX962):
            return  // ECDSA signs the digest as given; its length was checked by the caller
        case (.rsa, .pkcs1v15):
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING))
            if let hash { try LibCrypto.check(EVP_PKEY_CTX_set_signature_md(ctx, hash.md)) }
        case (.rsa, .pss):
            guard let hash else { throw KeyError.invalidInput }
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PSS_PADDING))
            try LibCrypto.check(EVP_PKEY_CTX_set_signature_md(ctx, hash.md))
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, hash.md))
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, RSA_PSS_SALTLEN_DIGEST))
        default:  // a scheme of another kind; Ed25519 signs messages, not digests (sign(message:))
            throw KeyError.unsupported
        }
    }
}
