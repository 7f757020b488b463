import CTSS2
import KeychainCrypto

extension TPM {
    /// Seals `secret` (at most 128 bytes) under this TPM's storage root key: a primary copy
    /// bound to `pcrs` at their current values (TPM2_PolicyPCR, SHA-256 bank) and, when PCRs are
    /// given, a recovery copy whose auth value is `recoveryAuth` (Esys_Create, keyedhash).
    /// `rootName`, when given (a reseal: the old file's), is the storage root key the secret may
    /// be sealed under: another one (an interposer's, which would learn the salt of the session
    /// that hides the secret) is refused before anything is sent to it.
    /// - Throws: `TPMError.failed` for `SealedKey.resettablePCRs`, which bind nothing;
    ///   `.otherTPM` for a storage root key other than `rootName`.
    public func seal(_ secret: SecureBytes, pcrs: [Int], recoveryAuth: SecureBytes?, under rootName: [UInt8]? = nil) throws -> SealedKey {
        if let refusal = SealedKey.refusal(of: pcrs) { throw TPMError.failed(call: "seal", code: 0, text: refusal) }
        return try withPrimary { srk in
            try checkRoot(srk, rootName)
            let mask = pcrs.reduce(UInt32(0)) { $0 | 1 << UInt32($1) }
            let policy = pcrs.isEmpty ? [] : try pcrPolicyDigest(mask: mask, pcrs: pcrs)
            let primary = try create(under: srk, secret: secret, policy: policy, auth: nil)
            let recovery = try pcrs.isEmpty ? nil : recoveryAuth.map { try create(under: srk, secret: secret, policy: [], auth: $0) }
            return SealedKey(pcrs: pcrs, primary: primary, recovery: recovery, rootName: try name(of: srk))
        }
    }

    /// Unseals the primary copy, in a PCR policy session when it is bound to PCRs.
    /// - Throws: `TPMError.pcrMismatch` after a PCR change, `.otherTPM` for another TPM's blob.
    public func unseal(_ sealed: SealedKey) throws -> SecureBytes {
        try withPrimary { srk in
            try checkRoot(srk, sealed.rootName)
            return try withLoaded(sealed.primary, under: srk) { object in
                try withEncryptedSession(salt: srk, kc_session_encrypt) { hide in
                    guard !sealed.pcrs.isEmpty else {
                        return try unsealObject(object, session: kc_tr_password, encrypt: hide, pcrs: [])
                    }
                    return try withPCRPolicy(mask: sealed.pcrMask, pcrs: sealed.pcrs, trial: false) { session in
                        try unsealObject(object, session: session, encrypt: hide, pcrs: sealed.pcrs)
                    }
                }
            }
        }
    }

    /// Unseals the recovery copy with its auth value.
    /// - Throws: `TPMError.wrongPassphrase` for another auth value; `.failed` when there is no
    ///   recovery copy.
    public func unsealRecovery(_ sealed: SealedKey, auth: SecureBytes) throws -> SecureBytes {
        guard let recovery = sealed.recovery else {
            throw TPMError.failed(call: "unseal", code: 0, text: "the sealed key has no recovery copy")
        }
        return try withPrimary { srk in
            try checkRoot(srk, sealed.rootName)
            return try withLoaded(recovery, under: srk) { object in
                let a = try SecureBytes(count: MemoryLayout<TPM2B_AUTH>.size)
                defer { a.wipe() }
                return try a.withUnsafeMutableBytes { raw in
                    let p = try bound(raw, to: TPM2B_AUTH.self)
                    _ = auth.withUnsafeBytes { kc_auth(p, $0.bindMemory(to: UInt8.self).baseAddress, $0.count) }
                    if let e = TPMError.check(Esys_TR_SetAuth(context, object, p), "Esys_TR_SetAuth") { throw e }
                    // The TSS keeps the auth value with the object: overwrite it with zeros after use.
                    defer {
                        kc_auth(p, nil, 0)
                        Esys_TR_SetAuth(context, object, p)
                    }
                    // An HMAC session authorizes with the auth value, which never crosses the
                    // bus, and encrypts the key on its way back.
                    return try withEncryptedSession(salt: srk, kc_session_encrypt) { session in
                        try unsealObject(object, session: session, encrypt: kc_tr_none, pcrs: [])
                    }
                }
            }
        }
    }

    /// A sealed file or token key blob that names its storage root key (format 2) is used only
    /// under that key: another
    /// TPM's, or a key an interposer answered TPM2_CreatePrimary with (to learn the salts of the
    /// encrypted sessions), is refused before any session is salted to it, as another TPM.
    func checkRoot(_ srk: ESYS_TR, _ pinned: [UInt8]?) throws {
        guard let pinned else { return }
        guard try name(of: srk) == pinned else { throw TPMError.otherTPM }
    }

    private func create(under parent: ESYS_TR, secret: SecureBytes, policy: [UInt8], auth: SecureBytes?) throws -> SealedKey.Object {
        var template = TPM2B_PUBLIC()
        guard policy.withUnsafeBufferPointer({ kc_sealed_template(&template, $0.baseAddress, $0.count) }) == 0 else {
            throw TPMError.failed(call: "seal", code: 0, text: "policy digest too long")
        }
        // The secret and the auth value pass through this structure: guarded memory, wiped.
        let sensitive = try SecureBytes(count: MemoryLayout<TPM2B_SENSITIVE_CREATE>.size)
        defer { sensitive.wipe() }
        return try sensitive.withUnsafeMutableBytes { raw in
            let s = try bound(raw, to: TPM2B_SENSITIVE_CREATE.self)
            let ok = secret.withUnsafeBytes { data in
                (auth ?? secret).withUnsafeBytes { a in
                    kc_sensitive_create(s, data.bindMemory(to: UInt8.self).baseAddress, data.count,
                                        a.bindMemory(to: UInt8.self).baseAddress, auth == nil ? 0 : a.count)
                }
            }
            guard ok == 0 else { throw TPMError.failed(call: "seal", code: 0, text: "secret or auth value too long") }
            var outside = TPM2B_DATA()
            var creation = TPML_PCR_SELECTION()
            var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
            var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
            var creationData: UnsafeMutablePointer<TPM2B_CREATION_DATA>?
            var creationHash: UnsafeMutablePointer<TPM2B_DIGEST>?
            var ticket: UnsafeMutablePointer<TPMT_TK_CREATION>?
            // The sensitive area (the secret and the auth value) is the first parameter: hidden.
            let rc = try withEncryptedSession(salt: parent, kc_session_decrypt) { hide in
                Esys_Create(context, parent, kc_tr_password, hide, kc_tr_none, s, &template, &outside, &creation,
                            &outPrivate, &outPublic, &creationData, &creationHash, &ticket)
            }
            defer { Esys_Free(outPrivate); Esys_Free(outPublic); Esys_Free(creationData); Esys_Free(creationHash); Esys_Free(ticket) }
            if let e = TPMError.check(rc, "Esys_Create") { throw e }
            guard let outPrivate, let outPublic else { throw TPMError.failed(call: "Esys_Create", code: 0, text: "no object") }
            return SealedKey.Object(publicArea: try marshal(outPublic, Tss2_MU_TPM2B_PUBLIC_Marshal),
                                    privateArea: try marshal(outPrivate, Tss2_MU_TPM2B_PRIVATE_Marshal))
        }
    }

    /// Loads a sealed object under the storage root key, runs `body`, flushes it.
    func withLoaded<R>(_ object: SealedKey.Object, under parent: ESYS_TR, _ body: (ESYS_TR) throws -> R) throws -> R {
        var pub = TPM2B_PUBLIC()
        var priv = TPM2B_PRIVATE()
        try unmarshal(object.publicArea, into: &pub, Tss2_MU_TPM2B_PUBLIC_Unmarshal)
        try unmarshal(object.privateArea, into: &priv, Tss2_MU_TPM2B_PRIVATE_Unmarshal)
        var handle: ESYS_TR = kc_tr_none
        let rc = Esys_Load(context, parent, kc_tr_password, kc_tr_none, kc_tr_none, &priv, &pub, &handle)
        // The private area is integrity-protected by the parent's key: another TPM's storage root
        // key (another owner seed) fails that check, whatever code the TPM reports for the
        // private or public area. A warning (no object memory left, retry) or any other code says
        // nothing of the blob: it is that failure, never "another TPM", which `device-key forget`
        // takes as a key gone for good.
        if rc != 0 && kc_rc_is_parameter_error(rc) != 0 { throw TPMError.otherTPM }
        if let e = TPMError.check(rc, "Esys_Load") { throw e }
        defer { Esys_FlushContext(context, handle) }
        return try body(handle)
    }

    /// TPM2_Unseal; the TSS's output buffer is copied into guarded memory and zeroed before it is freed.
    /// `session` authorizes; `encrypt` (or `session` itself) hides the unsealed bytes on the bus.
    private func unsealObject(_ object: ESYS_TR, session: ESYS_TR, encrypt: ESYS_TR, pcrs: [Int]) throws -> SecureBytes {
        var out: UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>?
        let rc = Esys_Unseal(context, object, session, encrypt, kc_tr_none, &out)
        defer {
            if let out { explicit_bzero(out, MemoryLayout<TPM2B_SENSITIVE_DATA>.size) }
            Esys_Free(out)
        }
        if let e = TPMError.check(rc, "Esys_Unseal", pcrs: pcrs) { throw e }
        guard let out else { throw TPMError.failed(call: "Esys_Unseal", code: 0, text: "no data") }
        return try SecureBytes(copying: UnsafeRawBufferPointer(start: kc_sensitive_data_bytes(out), count: Int(out.pointee.size)))
    }

    private func bound<T>(_ raw: UnsafeMutableRawBufferPointer, to: T.Type) throws -> UnsafeMutablePointer<T> {
        guard let base = raw.baseAddress, raw.count >= MemoryLayout<T>.size,
              Int(bitPattern: base) % MemoryLayout<T>.alignment == 0 else {
            throw TPMError.failed(call: "seal", code: 0, text: "guarded buffer misaligned")
        }
        return base.bindMemory(to: T.self, capacity: 1)
    }

    func marshal<T>(_ value: UnsafePointer<T>,
                            _ fn: (UnsafePointer<T>?, UnsafeMutablePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?) -> TSS2_RC) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: MemoryLayout<T>.size + 16)
        var offset = 0
        let rc = buffer.withUnsafeMutableBufferPointer { fn(value, $0.baseAddress, $0.count, &offset) }
        if let e = TPMError.check(rc, "Tss2_MU_Marshal") { throw e }
        return Array(buffer[..<offset])
    }

    private func unmarshal<T>(_ bytes: [UInt8], into value: inout T,
                              _ fn: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<T>?) -> TSS2_RC) throws {
        var offset = 0
        let rc = bytes.withUnsafeBufferPointer { fn($0.baseAddress, $0.count, &offset, &value) }
        guard rc == 0, offset == bytes.count else { throw SealedKey.ParseError.malformed }
    }
}
