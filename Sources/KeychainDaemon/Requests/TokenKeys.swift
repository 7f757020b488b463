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

    /// Uses a token key in the TPM: signs (ECDSA with SHA-256, of the message or a 32-byte
    /// digest) or agrees on a secret (ECDH, bare or through the X9.63 KDF); returns the audit
    /// event and the result.
    /// - Throws: `unimplemented` for any other use or algorithm, `param` for a bad peer or size.
    static func use(_ use: String, _ algorithm: AppleAlgorithm, blob: SecureBytes, input: SecureBytes, options: Attributes,
                    log: (String) -> Void) throws -> (event: AuditEvent, result: SecureBytes) {
        let key = try blob.withUnsafeBytes { raw in
            do { return try TokenKey(blob: Array(raw)) } catch { throw KeychainStatus.decode }
        }
        switch (use, algorithm) {
        case ("sign", .ecdsa(let hash, let message)) where hash == .sha256 || (hash == nil && !message):
            let digest = try input.withUnsafeBytes { try AppleAlgorithm.digest($0, hash: hash, message: message) }
            guard digest.count == 32 else { throw KeychainStatus.param }
            return (.sign, try SecureBytes(copying: try tpmCall(log) { try TPM().sign(digest: digest, with: key) }))
        case ("keyExchange", .ecdh(let kdf)):
            guard case .data(let peer)? = options["peer"], peer.count == 65, peer[0] == 4 else { throw KeychainStatus.param }
            let z = try tpmCall(log) { try TPM().sharedSecret(peer: peer, with: key) }
            guard let kdf else { return (.keyExchange, z) }
            defer { z.wipe() }
            guard let size = options["requestedSize"]?.numberValue, size > 0, size <= 1 << 16 else { throw KeychainStatus.param }
            var info: [UInt8] = []
            if case .data(let d)? = options["sharedInfo"] { info = d }
            return (.keyExchange, try x963KDF(kdf, secret: z, sharedInfo: info, count: Int(size)))
        default:
            throw KeychainStatus.unimplemented
        }
    }

    /// Runs a TPM call; a failure is logged with its reason and answered with its status.
    private static func tpmCall<R>(_ log: (String) -> Void, _ body: () throws -> R) throws -> R {
        do { return try body() } catch let e as TPMError {
            log("token key: \(e)")
            throw e.status
        }
    }
}
