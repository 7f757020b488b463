import KeychainCore
import KeychainCrypto
import KeychainKeys
import KeychainProtocol
import KeychainTPM
import Synchronization

/// Keys of `kSecAttrTokenIDSecureEnclave`, made and used inside the TPM (docs/tpm.md): the
/// item's secret is the TPM-wrapped key, its `pubk` the public point; `extr` is always false,
/// so the blob is never returned (as Apple's Secure Enclave keys cannot be exported), and its
/// protection is a ThisDeviceOnly class (WhenUnlockedThisDeviceOnly unless the caller names one).
enum TokenKeys {
    static func isTokenKey(_ attributes: Attributes) -> Bool { attributes[.tokenID] != nil }

    /// The add of a token key: a new P-256 key made in the TPM.
    /// - Throws: `unimplemented` for another token, `param` for key bytes sent with it (the key
    ///   is made here), another key type, a class that may leave the machine or an access control
    ///   without `privateKeyUsage`, the TPM's status when it fails.
    static func generate(_ query: Attributes, secret: SecureBytes?, log: (String) -> Void) throws -> (Attributes, SecureBytes) {
        guard query[.tokenID]?.stringValue == ValueName.tokenIDSecureEnclave else { throw KeychainStatus.unimplemented }
        guard secret == nil || secret?.count == 0 else { throw KeychainStatus.param }
        guard query[.keyType]?.numberValue ?? 73 == 73, query[.keySizeInBits]?.numberValue ?? 256 == 256,
              query[.keyClass]?.numberValue ?? 1 == 1 else { throw KeychainStatus.param }
        // The wrapped key opens only in this TPM: it may not leave in a backup or through sync.
        var q = query
        if q[.accessible] == nil && q[.accessControl] == nil {
            q[.accessible] = .string(ProtectionClass.whenUnlockedThisDeviceOnly.rawValue)
        }
        if let p = q[.accessible]?.stringValue, ProtectionClass(rawValue: p)?.isThisDeviceOnly != true { throw KeychainStatus.param }
        if q[.synchronizable]?.isTrue == true { throw KeychainStatus.param }
        // An access control carries the class too, and must let the TPM use the key
        // (`privateKeyUsage`); its presence flags gate each use (KeyRequests.openKey).
        if let value = q[.accessControl] {
            guard let control = AccessControl(value), control.protection.isThisDeviceOnly,
                  control.flags & AccessControl.privateKeyUsage != 0 else { throw KeychainStatus.param }
        }
        let key = try tpmCall(log) { try TPM().createTokenKey() }
        let fixed: Attributes = [.keyType: .number(73), .keyClass: .number(1), .keySizeInBits: .number(256),
                                 .effectiveKeySize: .number(256), .isExtractable: .bool(false), .isSensitive: .bool(true),
                                 .alwaysSensitive: .bool(true), .neverExtractable: .bool(true),
                                 .publicKey: .data(key.publicPoint),
                                 .applicationLabel: .data(DigestAlgorithm.sha1.hash(key.publicPoint))]  // Apple's label
        for (k, v) in fixed { q[k] = v }
        return (q, try SecureBytes(copying: key.blob))
    }

    /// What a token key's add fixes and no update may change: `extr` true, or another key class
    /// (a public key's bytes are returned), would hand out the wrapped key, which anyone who can
    /// reach the TPM loads and uses outside the daemon; another type or size would misname it.
    static let fixedAttributes: [AttributeKey] = [.isExtractable, .keyClass, .keyType, .keySizeInBits, .effectiveKeySize,
                                                  .isSensitive, .alwaysSensitive, .neverExtractable]

    /// An update may not give a token key other bytes, another token, a class that lets it
    /// leave the machine or another of `fixedAttributes`: the wrapped key would stop working,
    /// be copied where it cannot, or be returned. `matching` finds the keys the update would
    /// change (only asked when it could matter).
    /// - Throws: `param` for such an update.
    static func checkUpdate(query: Attributes, changes: Attributes, secret: SecureBytes?,
                            matching: (Attributes) throws -> QueryResult) throws {
        let fixedChange = fixedAttributes.contains { changes[$0] != nil }
        guard StoredKeyFacts.isKeyItem(query),
              secret != nil || changes[.tokenID] != nil || changes[.accessible] != nil || changes[.accessControl] != nil
                || changes[.synchronizable] != nil || fixedChange else { return }
        let found = try StoredKeyFacts.storedItems(query, matching: matching)
        let tokens = found.filter { $0.item.map { isTokenKey($0.attributes) } ?? false }
        guard !tokens.isEmpty || changes[.tokenID] != nil else { return }
        guard secret == nil, changes[.tokenID] == nil, changes[.synchronizable]?.isTrue != true, !fixedChange else {
            throw KeychainStatus.param
        }
        if let p = changes[.accessible]?.stringValue, ProtectionClass(rawValue: p)?.isThisDeviceOnly != true { throw KeychainStatus.param }
        if let value = changes[.accessControl] {
            guard let control = AccessControl(value), control.protection.isThisDeviceOnly,
                  control.flags & AccessControl.privateKeyUsage != 0 else { throw KeychainStatus.param }
        }
    }

    /// Uses a token key in the TPM: signs (ECDSA with SHA-256, of the message or a 32-byte
    /// digest) or agrees on a secret (ECDH, bare or through the X9.63 KDF); returns the audit
    /// event and the result.
    /// - Throws: `unimplemented` for any other use or algorithm, `param` for a bad peer or size.
    static func use(_ request: KeyUseRequest, _ algorithm: AppleAlgorithm, blob: SecureBytes,
                    log: (String) -> Void) throws -> (event: AuditEvent, result: SecureBytes) {
        let input = request.input
        let key = try blob.withUnsafeBytes { raw in
            do { return try TokenKey(blob: Array(raw)) } catch { throw KeychainStatus.decode }
        }
        switch (request.use, algorithm) {
        case (.sign, .ecdsa(let hash, let message)) where hash == .sha256 || (hash == nil && !message):
            let digest = try input.withUnsafeBytes { try AppleAlgorithm.digest($0, hash: hash, message: message) }
            guard digest.count == 32 else { throw KeychainStatus.param }
            return (.sign, try SecureBytes(copying: try tpmCall(log) { try TPM().sign(digest: digest, with: key) }))
        case (.keyExchange, .ecdh(let kdf)):
            guard let peer = request.peer, peer.count == 65, peer[0] == 4 else { throw KeychainStatus.param }
            let z = try tpmCall(log) { try TPM().sharedSecret(peer: peer, with: key) }
            guard let kdf else { return (.keyExchange, z) }
            defer { z.wipe() }
            guard let size = request.requestedSize, size > 0, size <= 1 << 16 else { throw KeychainStatus.param }
            return (.keyExchange, try x963KDF(kdf, secret: z, sharedInfo: request.sharedInfo ?? [], count: Int(size)))
        default:
            throw KeychainStatus.unimplemented
        }
    }

    /// One TPM connection at a time: a TPM without a resource manager (/dev/tpm0, swtpm's
    /// socket) serves one client.
    private static let oneAtATime = Mutex(())

    /// Runs a TPM call; a failure is logged with its reason and answered with its status. A key
    /// wrapped by another TPM (the vault copied to another machine, or this TPM cleared since)
    /// is errSecDecode, as for the sealed device key: nothing is signed, in the TPM or elsewhere.
    private static func tpmCall<R: Sendable>(_ log: (String) -> Void, _ body: () throws -> R) throws -> R {
        do { return try oneAtATime.withLock { _ in try body() } } catch let e as TPMError {
            if e == .otherTPM {
                log("token key: the key was made by another TPM (or this TPM was cleared since): it cannot be used on this machine")
            } else {
                log("token key: \(e)")
            }
            throw e.status
        }
    }
}
