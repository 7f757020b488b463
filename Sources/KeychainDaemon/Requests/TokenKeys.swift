import KeychainCore
import KeychainCrypto
import KeychainKeys
import KeychainTPM

/// Keys of `kSecAttrTokenIDSecureEnclave`, made and used inside the TPM (docs/tpm.md): the
/// item's secret is the TPM-wrapped key, its `pubk` the public point; `extr` is always false,
/// so the blob is never returned (as Apple's Secure Enclave keys cannot be exported), and its
/// protection is a ThisDeviceOnly class (WhenUnlockedThisDeviceOnly unless the caller names one).
enum TokenKeys {
    static let attribute = "tkid"
    static let secureEnclave = "com.apple.setoken"

    static func isTokenKey(_ attributes: Attributes) -> Bool { attributes[attribute] != nil }

    /// The add of a token key: a new P-256 key made in the TPM; any secret sent is ignored.
    /// - Throws: `unimplemented` for another token or key type, the TPM's status when it fails.
    static func generate(_ query: Attributes, log: (String) -> Void) throws -> (Attributes, SecureBytes) {
        guard query[attribute]?.stringValue == secureEnclave else { throw KeychainStatus.unimplemented }
        guard query["type"]?.numberValue ?? 73 == 73, query["bsiz"]?.numberValue ?? 256 == 256,
              query["kcls"]?.numberValue ?? 1 == 1 else { throw KeychainStatus.param }
        // The wrapped key opens only in this TPM: it may not leave in a backup or through sync.
        var q = query
        if q["pdmn"] == nil && q["accc"] == nil { q["pdmn"] = .string(ProtectionClass.whenUnlockedThisDeviceOnly.rawValue) }
        if let p = q["pdmn"]?.stringValue, ProtectionClass(rawValue: p)?.isThisDeviceOnly != true { throw KeychainStatus.param }
        if q["sync"]?.isTrue == true { throw KeychainStatus.param }
        let key = try tpmCall(log) { try TPM().createTokenKey() }
        for (k, v) in ["type": AttributeValue.number(73), "kcls": .number(1), "bsiz": .number(256), "esiz": .number(256),
                       "extr": .bool(false), "sens": .bool(true), "asen": .bool(true), "next": .bool(true)] { q[k] = v }
        q[ItemClass.publicKeyAttribute] = .data(key.publicPoint)
        q["klbl"] = .data(DigestAlgorithm.sha1.hash(key.publicPoint))  // Apple's application label
        return (q, try SecureBytes(copying: key.blob))
    }

    /// Signs with a token key in the TPM: ECDSA with SHA-256 (message or 32-byte digest).
    /// - Throws: `unimplemented` for any other use or algorithm (key agreement in the TPM is not built).
    static func use(_ use: String, _ algorithm: AppleAlgorithm, blob: SecureBytes, input: SecureBytes,
                    log: (String) -> Void) throws -> SecureBytes {
        guard use == "sign", case .ecdsa(let hash, let message) = algorithm, hash == .sha256 || (hash == nil && !message) else {
            throw KeychainStatus.unimplemented
        }
        let digest = try input.withUnsafeBytes { try AppleAlgorithm.digest($0, hash: hash, message: message) }
        guard digest.count == 32 else { throw KeychainStatus.param }
        let key = try blob.withUnsafeBytes { raw in
            do { return try TokenKey(blob: Array(raw)) } catch { throw KeychainStatus.decode }
        }
        return try SecureBytes(copying: try tpmCall(log) { try TPM().sign(digest: digest, with: key) })
    }

    /// Runs a TPM call; a failure is logged with its reason and answered with its status.
    private static func tpmCall<R>(_ log: (String) -> Void, _ body: () throws -> R) throws -> R {
        do { return try body() } catch let e as TPMError {
            log("token key: \(e)")
            throw e.status
        }
    }
}
