import COpenSSL
import KeychainCrypto

extension AsymmetricKey {
    /// The ECDH shared secret with `peer` (`EVP_PKEY_derive`): the x-coordinate of the shared
    /// point, as long as the field (SEC 1 3.3.1). For these curves the cofactor is 1, so the
    /// cofactor variant gives the same bytes.
    /// - Throws: `unsupported` unless this is a private EC key and `peer` is on the same curve.
    public func sharedSecret(with peer: AsymmetricKey) throws -> SecureBytes {
        guard case .ec(let curve) = kind, isPrivate, peer.kind == kind else { throw KeyError.unsupported }
        return try LibCrypto.withContext(pkey) { ctx in
            try LibCrypto.check(EVP_PKEY_derive_init(ctx))
            try LibCrypto.check(EVP_PKEY_derive_set_peer(ctx, peer.pkey), .invalidKeyData)
            var length = curve.fieldBytes
            let out = try SecureBytes(count: length)
            let result = out.withUnsafeMutableBytes {
                EVP_PKEY_derive(ctx, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
            }
            try LibCrypto.check(result)
            guard length == curve.fieldBytes else { throw KeyError.library }
            return out
        }
    }
}
