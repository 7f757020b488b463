import KeychainCrypto
import KeychainKeys

// The legacy SecKey calls (SecKey.h, iOS 2 / macOS 10.7), still used by libraries that support
// older systems. As in Apple's SecKey.m since iOS 10, each one is the newer call with the
// algorithm its padding names (`SecKeyGetEncryptionAlgorithmForPadding`,
// `SecKeyGetSignatureAlgorithmForPadding`), its result copied into the caller's buffer
// (`SecKeyPerformLegacyOperation`); the CFError becomes a bare status.

/// The padding of a legacy call (`SecPadding`, `CF_OPTIONS(uint32_t)`), with Apple's raw values.
/// `[]` is `kSecPaddingNone`: raw RSA.
public struct SecPadding: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// RSA PKCS #1 v1.5: encryption padding, or for `SecKeyRawSign` a signature over the input
    /// as an encoded `DigestInfo`; for ECDSA, an X9.62 signature of the digest.
    public static let PKCS1 = SecPadding(rawValue: 0x0001)
    /// RSA OAEP with SHA-1 and MGF1-SHA-1 (encryption only).
    public static let OAEP = SecPadding(rawValue: 0x0002)
    /// ECDSA signatures as `r || s` (RFC 4754).
    public static let sigRaw = SecPadding(rawValue: 0x4000)
    /// Deprecated by Apple; the legacy calls refuse them with errSecParam, as Apple's do.
    public static let PKCS1MD2 = SecPadding(rawValue: 0x8000)
    public static let PKCS1MD5 = SecPadding(rawValue: 0x8001)
    /// `SecKeyRawSign` / `SecKeyRawVerify` only: the input is a digest of that hash; its
    /// `DigestInfo` is added, then PKCS #1 v1.5 padding.
    public static let PKCS1SHA1 = SecPadding(rawValue: 0x8002)
    public static let PKCS1SHA224 = SecPadding(rawValue: 0x8003)
    public static let PKCS1SHA256 = SecPadding(rawValue: 0x8004)
    public static let PKCS1SHA384 = SecPadding(rawValue: 0x8005)
    public static let PKCS1SHA512 = SecPadding(rawValue: 0x8006)

    /// Apple's `SecKeyGetEncryptionAlgorithmForPadding`: RSA only, OAEP is SHA-1.
    func encryptionAlgorithm(_ key: SecKey) -> SecKeyAlgorithm? {
        guard key.key.kind == .rsa else { return nil }
        switch self {
        case []: return .rsaEncryptionRaw
        case .PKCS1: return .rsaEncryptionPKCS1
        case .OAEP: return .rsaEncryptionOAEPSHA1
        default: return nil
        }
    }

    /// Apple's `SecKeyGetSignatureAlgorithmForPadding` as iOS has it (and macOS for keys that
    /// are not CSSM's): the `PKCS1SHA*` paddings take a digest, not the message. For ECDSA,
    /// `PKCS1` names the digest by its length and any other padding but `sigRaw` is X9.62.
    func signatureAlgorithm(_ key: SecKey, digestLength: Int) -> SecKeyAlgorithm? {
        switch key.key.kind {
        case .rsa:
            switch self {
            case []: return .rsaSignatureRaw
            case .PKCS1: return .rsaSignatureDigestPKCS1v15Raw
            case .PKCS1SHA1: return .rsaSignatureDigestPKCS1v15SHA1
            case .PKCS1SHA224: return .rsaSignatureDigestPKCS1v15SHA224
            case .PKCS1SHA256: return .rsaSignatureDigestPKCS1v15SHA256
            case .PKCS1SHA384: return .rsaSignatureDigestPKCS1v15SHA384
            case .PKCS1SHA512: return .rsaSignatureDigestPKCS1v15SHA512
            default: return nil
            }
        case .ec:
            if self == .sigRaw { return .ecdsaSignatureRFC4754 }
            if self == .PKCS1 {
                switch digestLength {
                case 20: return .ecdsaSignatureDigestX962SHA1
                case 28: return .ecdsaSignatureDigestX962SHA224
                case 32: return .ecdsaSignatureDigestX962SHA256
                case 48: return .ecdsaSignatureDigestX962SHA384
                case 64: return .ecdsaSignatureDigestX962SHA512
                default: break
                }
            }
            return .ecdsaSignatureDigestX962
        case .ed25519:
            return nil
        }
    }
}

/// SecureTransport's `errSSLCrypto`, which the legacy calls return for a signature that does
/// not verify (Apple's `SecKeyPerformLegacyOperation` turns errSecVerifyFailed into it).
public let errSSLCrypto: OSStatus = -9809

/// Encrypts `plainText` with a public key (`SecKeyEncrypt`): `[]` raw RSA, `.PKCS1`, `.OAEP`
/// (SHA-1). The ciphertext is `SecKeyGetBlockSize(key)` bytes.
/// - Returns: errSecSuccess with the ciphertext in `cipherText` and its length in
///   `cipherTextLen`; errSecParam for another padding or key kind, a plaintext too long, or a
///   buffer shorter than the ciphertext (`cipherTextLen` then left as it was, as Apple's does).
public func SecKeyEncrypt(_ key: SecKey, _ padding: SecPadding, _ plainText: UnsafePointer<UInt8>, _ plainTextLen: Int,
                          _ cipherText: UnsafeMutablePointer<UInt8>, _ cipherTextLen: UnsafeMutablePointer<Int>) -> OSStatus {
    guard let algorithm = padding.encryptionAlgorithm(key) else { return errSecParam }
    return legacyCall {
        let out = try KeyOperations.encrypt(key, algorithm, UnsafeRawBufferPointer(start: plainText, count: plainTextLen))
        try out.withUnsafeBytes { try deliver($0, to: cipherText, cipherTextLen) }
    }
}

/// Decrypts `cipherText` with a private key (`SecKeyDecrypt`); a key from the keychain
/// decrypts in the daemon. With `[]` (raw RSA) the leading zero bytes of the block are
/// dropped, as the call's contract says.
/// - Returns: errSecSuccess with the plaintext in `plainText` and its length in `plainTextLen`;
///   errSecParam for another padding or key kind, a ciphertext that does not decrypt, or a
///   buffer too short (`plainTextLen` left as it was); a stored key's status from the keychain.
public func SecKeyDecrypt(_ key: SecKey, _ padding: SecPadding, _ cipherText: UnsafePointer<UInt8>, _ cipherTextLen: Int,
                          _ plainText: UnsafeMutablePointer<UInt8>, _ plainTextLen: UnsafeMutablePointer<Int>) -> OSStatus {
    guard let algorithm = padding.encryptionAlgorithm(key) else { return errSecParam }
    return legacyCall {
        let plain = try KeyOperations.decrypt(key, algorithm, UnsafeRawBufferPointer(start: cipherText, count: cipherTextLen))
        defer { plain.wipe() }
        try plain.withUnsafeBytes { raw in
            let skip = padding == [] ? (raw.firstIndex { $0 != 0 } ?? raw.count) : 0
            try deliver(UnsafeRawBufferPointer(rebasing: raw[skip...]), to: plainText, plainTextLen)
        }
    }
}

/// Signs `dataToSign` with a private key (`SecKeyRawSign`). RSA: `[]` raw, `.PKCS1` the input
/// as an encoded `DigestInfo`, `.PKCS1SHA256` (and the other SHA paddings) the input as that
/// digest, its `DigestInfo` added. ECDSA: a DER signature of the digest.
/// - Returns: errSecSuccess with the signature in `sig` and its length in `sigLen`; errSecParam
///   for an unknown padding (and MD2/MD5), a digest of the wrong length, or a buffer too short
///   (`sigLen` left as it was); errSecUnimplemented for `.sigRaw`.
public func SecKeyRawSign(_ key: SecKey, _ padding: SecPadding, _ dataToSign: UnsafePointer<UInt8>, _ dataToSignLen: Int,
                          _ sig: UnsafeMutablePointer<UInt8>, _ sigLen: UnsafeMutablePointer<Int>) -> OSStatus {
    guard let algorithm = padding.signatureAlgorithm(key, digestLength: dataToSignLen) else { return errSecParam }
    return legacyCall {
        let signature = try KeyOperations.sign(key, algorithm, UnsafeRawBufferPointer(start: dataToSign, count: dataToSignLen))
        try signature.withUnsafeBytes { try deliver($0, to: sig, sigLen) }
    }
}

/// Verifies `sig` over `signedData` (`SecKeyRawVerify`), with the paddings of `SecKeyRawSign`.
/// - Returns: errSecSuccess; errSSLCrypto (-9809) for a signature that does not verify, as
///   Apple's does; errSecParam for an unknown padding.
public func SecKeyRawVerify(_ key: SecKey, _ padding: SecPadding, _ signedData: UnsafePointer<UInt8>, _ signedDataLen: Int,
                            _ sig: UnsafePointer<UInt8>, _ sigLen: Int) -> OSStatus {
    guard let algorithm = padding.signatureAlgorithm(key, digestLength: signedDataLen) else { return errSecParam }
    return legacyCall {
        try KeyOperations.verify(key, algorithm, UnsafeRawBufferPointer(start: signedData, count: signedDataLen),
                                 signature: UnsafeRawBufferPointer(start: sig, count: sigLen))
    }
}

/// Runs a legacy call: errSecSuccess, or the status of what it threw (errSecVerifyFailed
/// becomes errSSLCrypto, as in Apple's `SecKeyPerformLegacyOperation`).
private func legacyCall(_ body: () throws -> Void) -> OSStatus {
    do {
        try body()
        return errSecSuccess
    } catch {
        let status = appleStatus(of: error)  // the reason is Apple's to drop too
        return status == errSecVerifyFailed ? errSSLCrypto : status
    }
}

/// Copies `result` into the caller's buffer of `length.pointee` bytes and sets `length` to the
/// bytes written.
/// - Throws: errSecParam when it does not fit; `length` is not changed then (Apple's
///   `SecKeyPerformLegacyOperation` writes it only on success, the required length goes to
///   the error's reason only).
private func deliver(_ result: UnsafeRawBufferPointer, to buffer: UnsafeMutablePointer<UInt8>,
                     _ length: UnsafeMutablePointer<Int>) throws {
    guard result.count <= length.pointee else {
        throw KeyFailure.apple(errSecParam, "buffer too small (required \(result.count), provided \(length.pointee))")
    }
    if let base = result.baseAddress, result.count > 0 { UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: result.count) }
    length.pointee = result.count
}
