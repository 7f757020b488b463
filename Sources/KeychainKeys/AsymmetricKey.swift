import COpenSSL
import KeychainCrypto

/// The NIST prime curves Apple's `kSecAttrKeyTypeECSECPrimeRandom` keys use.
public enum Curve: Int, CaseIterable, Sendable {
    case p256 = 256, p384 = 384, p521 = 521

    var groupName: String {
        switch self {
        case .p256: return "prime256v1"
        case .p384: return "secp384r1"
        case .p521: return "secp521r1"
        }
    }

    /// Bytes of one coordinate or of the private scalar: 32, 48, 66.
    public var fieldBytes: Int { (rawValue + 7) / 8 }
    /// Length of an uncompressed point, `04 || X || Y`.
    public var publicLength: Int { 1 + 2 * fieldBytes }
    /// Length of Apple's private representation, `04 || X || Y || K`.
    public var privateLength: Int { 1 + 3 * fieldBytes }
}

public enum KeyKind: Equatable, Sendable {
    case ec(Curve)
    case rsa
    /// Ed25519 (RFC 8032), for signatures only; Apple has no SecKey type for it.
    case ed25519
}

/// A public or private EC, RSA or Ed25519 key held by libcrypto (`EVP_PKEY`). Immutable; each
/// operation makes its own context, so one key may be used from several threads at once.
public final class AsymmetricKey: @unchecked Sendable {
    // Unchecked: an EVP_PKEY never changed after init; every operation makes its own EVP_PKEY_CTX.
    let pkey: OpaquePointer
    public let kind: KeyKind
    public let isPrivate: Bool

    init(_ pkey: OpaquePointer, kind: KeyKind, isPrivate: Bool) {
        self.pkey = pkey
        self.kind = kind
        self.isPrivate = isPrivate
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The key size in bits: the curve's, or the RSA modulus's; 256 for Ed25519, the size of
    /// its keys (libcrypto says 253, the bits of the curve's order).
    public var sizeInBits: Int { kind == .ed25519 ? 256 : Int(EVP_PKEY_get_bits(pkey)) }

    // MARK: Generation

    /// A new EC key pair on `curve` (`EVP_PKEY_generate`).
    public static func generate(_ curve: Curve) throws -> AsymmetricKey {
        _ = LibCrypto.ready
        return try LibCrypto.withContext(named: "EC") { ctx in
            try LibCrypto.check(EVP_PKEY_keygen_init(ctx))
            try LibCrypto.check(EVP_PKEY_CTX_set_group_name(ctx, curve.groupName))
            var out: OpaquePointer?
            try LibCrypto.check(EVP_PKEY_generate(ctx, &out))
            return AsymmetricKey(try LibCrypto.notNil(out), kind: .ec(curve), isPrivate: true)
        }
    }

    /// The RSA sizes this library makes and reads: 1024 to 4096 bits, in whole bytes.
    public static let rsaSizes = 1024...4096

    /// A new RSA key pair of `bits` (public exponent 65537).
    /// - Throws: `invalidInput` for a size outside `rsaSizes` or not a multiple of 8.
    public static func generateRSA(bits: Int) throws -> AsymmetricKey {
        guard rsaSizes.contains(bits), bits % 8 == 0 else { throw KeyError.invalidInput }
        _ = LibCrypto.ready
        return try LibCrypto.withContext(named: "RSA") { ctx in
            try LibCrypto.check(EVP_PKEY_keygen_init(ctx))
            try LibCrypto.check(EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)))
            var out: OpaquePointer?
            try LibCrypto.check(EVP_PKEY_generate(ctx, &out))
            return AsymmetricKey(try LibCrypto.notNil(out), kind: .rsa, isPrivate: true)
        }
    }

    // MARK: Public half

    /// The public key of this key (itself when it is public).
    public func publicKey() throws -> AsymmetricKey {
        guard isPrivate else { return self }
        let bytes = publicBytes()
        return try bytes.withUnsafeBytes { raw in
            switch kind {
            case .ec: return try AsymmetricKey.ec(raw, isPrivate: false)
            case .rsa: return try AsymmetricKey.rsa(raw, isPrivate: false)
            case .ed25519: return try AsymmetricKey.ed25519(raw, isPrivate: false)
            }
        }
    }

    /// Apple's public representation: the uncompressed point `04 || X || Y` (ANSI X9.63) for EC,
    /// the PKCS#1 `RSAPublicKey` DER for RSA; the raw 32-byte public key for Ed25519.
    public func publicBytes() -> [UInt8] {
        switch kind {
        case .ec:
            var length = 0
            _ = EVP_PKEY_get_octet_string_param(pkey, "encoded-pub-key", nil, 0, &length)
            var out = [UInt8](repeating: 0, count: length)
            let ok = out.withUnsafeMutableBufferPointer {
                EVP_PKEY_get_octet_string_param(pkey, "encoded-pub-key", $0.baseAddress, length, &length)
            }
            precondition(ok == 1, "EC public key could not be encoded")
            return out
        case .rsa:
            let length = i2d_PublicKey(pkey, nil)
            precondition(length > 0, "RSA public key could not be encoded")
            var out = [UInt8](repeating: 0, count: Int(length))
            out.withUnsafeMutableBufferPointer { buffer in
                var cursor = buffer.baseAddress
                _ = i2d_PublicKey(pkey, &cursor)
            }
            return out
        case .ed25519:
            return ed25519PublicBytes()
        }
    }

    // MARK: Private representation

    /// Apple's private representation, in guarded memory: `04 || X || Y || K` for EC (K the
    /// private scalar, padded to the field size), the PKCS#1 `RSAPrivateKey` DER for RSA, the
    /// 32-byte seed for Ed25519.
    /// - Throws: `unsupported` for a public key; `CryptoError.allocationFailed`.
    public func privateBytes() throws -> SecureBytes {
        guard isPrivate else { throw KeyError.unsupported }
        switch kind {
        case .ec(let curve):
            let point = publicBytes()
            var scalar: OpaquePointer?
            try LibCrypto.check(EVP_PKEY_get_bn_param(pkey, "priv", &scalar))
            defer { BN_clear_free(scalar) }
            let out = try SecureBytes(count: curve.privateLength)
            let written: Int32 = out.withUnsafeMutableBytes { raw in
                raw.copyBytes(from: point)
                let k = raw.baseAddress!.advanced(by: point.count).assumingMemoryBound(to: UInt8.self)
                return BN_bn2binpad(scalar, k, Int32(curve.fieldBytes))
            }
            guard Int(written) == curve.fieldBytes else { throw KeyError.library }
            return out
        case .rsa:
            let length = i2d_PrivateKey(pkey, nil)
            guard length > 0 else { throw KeyError.library }
            let out = try SecureBytes(count: Int(length))
            out.withUnsafeMutableBytes { raw in
                var cursor: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
                _ = i2d_PrivateKey(pkey, &cursor)
            }
            return out
        case .ed25519:
            return try ed25519Seed()
        }
    }

    // MARK: Import

    /// An EC key from Apple's representation (`04 || X || Y` public, `04 || X || Y || K` private);
    /// the curve follows from the length. The point must lie on the curve, and a private scalar
    /// must belong to the point (`EVP_PKEY_public_check`, `EVP_PKEY_pairwise_check`).
    /// - Throws: `invalidKeyData`.
    public static func ec(_ bytes: UnsafeRawBufferPointer, isPrivate: Bool) throws -> AsymmetricKey {
        _ = LibCrypto.ready
        let curve = Curve.allCases.first { (isPrivate ? $0.privateLength : $0.publicLength) == bytes.count }
        guard let curve, bytes.first == 4 else { throw KeyError.invalidKeyData }
        // The builder keeps pointers to names and values until `to_param` copies them.
        var group = Array(curve.groupName.utf8CString)
        let builder = try LibCrypto.notNil(OSSL_PARAM_BLD_new())
        defer { OSSL_PARAM_BLD_free(builder) }
        var scalar: OpaquePointer?
        defer { if scalar != nil { BN_clear_free(scalar) } }
        let built = try group.withUnsafeMutableBufferPointer { name in
            try LibCrypto.check(OSSL_PARAM_BLD_push_utf8_string(builder, kc_param_group, name.baseAddress, 0))
            try LibCrypto.check(OSSL_PARAM_BLD_push_octet_string(builder, kc_param_pub, bytes.baseAddress, curve.publicLength))
            if isPrivate {
                scalar = try LibCrypto.notNil(BN_secure_new())
                let k = bytes.baseAddress!.advanced(by: curve.publicLength).assumingMemoryBound(to: UInt8.self)
                _ = try LibCrypto.notNil(BN_bin2bn(k, Int32(curve.fieldBytes), scalar))
                try LibCrypto.check(OSSL_PARAM_BLD_push_BN(builder, kc_param_priv, scalar))
            }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        let params = try LibCrypto.notNil(built)
        defer { OSSL_PARAM_free(params) }  // clears the secure part holding the scalar
        let pkey: OpaquePointer = try LibCrypto.withContext(named: "EC") { ctx in
            try LibCrypto.check(EVP_PKEY_fromdata_init(ctx))
            var out: OpaquePointer?
            let selection = isPrivate ? kc_selection_keypair : kc_selection_public
            try LibCrypto.check(EVP_PKEY_fromdata(ctx, &out, selection, params), .invalidKeyData)
            return try LibCrypto.notNil(out, .invalidKeyData)
        }
        let key = AsymmetricKey(pkey, kind: .ec(curve), isPrivate: isPrivate)
        try LibCrypto.withContext(pkey) { ctx in
            try LibCrypto.check(isPrivate ? EVP_PKEY_pairwise_check(ctx) : EVP_PKEY_public_check(ctx), .invalidKeyData)
        }
        return key
    }

    /// An RSA key from PKCS#1 DER (`RSAPublicKey` or `RSAPrivateKey`), every byte used.
    /// - Throws: `invalidKeyData`, also for a modulus outside `rsaSizes`.
    public static func rsa(_ bytes: UnsafeRawBufferPointer, isPrivate: Bool) throws -> AsymmetricKey {
        _ = LibCrypto.ready
        guard let base = bytes.baseAddress, bytes.count > 0 else { throw KeyError.invalidKeyData }
        var cursor: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
        let decoded = isPrivate
            ? d2i_PrivateKey(kc_pkey_rsa, nil, &cursor, bytes.count)
            : d2i_PublicKey(kc_pkey_rsa, nil, &cursor, bytes.count)
        let pkey = try LibCrypto.notNil(decoded, .invalidKeyData)
        let key = AsymmetricKey(pkey, kind: .rsa, isPrivate: isPrivate)
        guard let end = cursor, UnsafeRawPointer(end) == base + bytes.count,
              rsaSizes.contains(key.sizeInBits) else { throw KeyError.invalidKeyData }
        if isPrivate {
            try LibCrypto.withContext(pkey) { try LibCrypto.check(EVP_PKEY_pairwise_check($0), .invalidKeyData) }
        }
        return key
    }
}
