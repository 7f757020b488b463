import CTSS2
import KeychainCrypto
import KeychainSystem

/// A connection to a TPM 2.0 through a TCTI (Esys_Initialize over Tss2_TctiLdr_Initialize).
/// Every object it loads is flushed before the call that loaded it returns, so the TPM holds
/// nothing of keychainfs between calls and no resource manager is needed.
public final class TPM {
    /// The TCTI configuration, in TPM2TOOLS_TCTI's syntax ("device:/dev/tpmrm0",
    /// "swtpm:host=127.0.0.1,port=2321"): `$KEYCHAINFS_TCTI`, else the TSS default.
    public let tcti: String
    private var tctiContext: OpaquePointer?
    private var esys: OpaquePointer?
    /// True once the TPM answered: only then is there anything to scrub.
    private var answered = false

    /// `$KEYCHAINFS_TCTI`, or nil for the TSS default (tabrmd, then /dev/tpmrm0, then /dev/tpm0).
    public static var configuredTCTI: String? {
        CurrentProcess.environment("KEYCHAINFS_TCTI")
    }

    /// Opens the TPM and starts it if nothing has (a simulator fresh from power-on).
    /// - Throws: `TPMError.unreachable` naming the TCTI when no TPM answers.
    public init(tcti: String? = TPM.configuredTCTI) throws {
        self.tcti = tcti ?? "default"
        var t: OpaquePointer?
        let rc = tcti.map { Tss2_TctiLdr_Initialize($0, &t) } ?? Tss2_TctiLdr_Initialize(nil, &t)
        guard rc == 0, let t else {
            throw TPMError.unreachable(tcti: self.tcti, detail: String(cString: Tss2_RC_Decode(rc)))
        }
        tctiContext = t
        var e: OpaquePointer?
        let erc = Esys_Initialize(&e, t, nil)
        guard erc == 0, let e else {
            Tss2_TctiLdr_Finalize(&tctiContext)
            throw TPMError.unreachable(tcti: self.tcti, detail: String(cString: Tss2_RC_Decode(erc)))
        }
        esys = e
        // The first command sent: a TCTI that loaded but reaches nothing fails here.
        let src = Esys_Startup(e, kc_su_clear)
        if src != 0 && kc_rc_base(src) != kc_rc_initialize {
            close()
            if kc_rc_is_tpm(src) != 0 { throw TPMError.check(src, "Esys_Startup")! }
            throw TPMError.unreachable(tcti: self.tcti, detail: String(cString: Tss2_RC_Decode(src)))
        }
        answered = true
    }

    deinit { close() }

    /// The TSS logs its errors to standard error; keychainfs reports them itself (`TPMError`).
    /// Call once at start, before other threads run (it sets `TSS2_LOG` unless the user did).
    public static func quietTSSLog() {
        try? CurrentProcess.setEnvironment("TSS2_LOG", to: "all+NONE", replacing: false)
    }

    private func close() {
        if let e = esys {
            if answered { scrub(e) }
            Esys_Finalize(&esys)
        }
        if tctiContext != nil { Tss2_TctiLdr_Finalize(&tctiContext) }
    }

    /// The TSS keeps the last command and response in its context (ordinary heap, freed
    /// without zeroing): a sealed secret or an unsealed key would stay there. Two harmless
    /// commands overwrite them first: TPM2_StirRandom with 128 zero bytes (a command longer than
    /// any that carried a secret) and TPM2_GetRandom of 64 bytes (a longer response).
    private func scrub(_ e: OpaquePointer) {
        var zeros = TPM2B_SENSITIVE_DATA()
        zeros.size = 128
        _ = Esys_StirRandom(e, kc_tr_none, kc_tr_none, kc_tr_none, &zeros)
        var random: UnsafeMutablePointer<TPM2B_DIGEST>?
        _ = Esys_GetRandom(e, kc_tr_none, kc_tr_none, kc_tr_none, 64, &random)
        Esys_Free(random)
    }

    var context: OpaquePointer { esys! }

    /// Runs `body` with the storage root key loaded (Esys_CreatePrimary under the owner
    /// hierarchy, whose auth is empty), then flushes it.
    func withPrimary<R>(_ body: (ESYS_TR) throws -> R) throws -> R {
        var template = TPM2B_PUBLIC()
        kc_srk_template(&template)
        var sensitive = TPM2B_SENSITIVE_CREATE()
        var outside = TPM2B_DATA()
        var creation = TPML_PCR_SELECTION()
        var handle: ESYS_TR = kc_tr_none
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        var creationData: UnsafeMutablePointer<TPM2B_CREATION_DATA>?
        var creationHash: UnsafeMutablePointer<TPM2B_DIGEST>?
        var ticket: UnsafeMutablePointer<TPMT_TK_CREATION>?
        let rc = Esys_CreatePrimary(context, kc_tr_owner, kc_tr_password, kc_tr_none, kc_tr_none, &sensitive, &template,
                                    &outside, &creation, &handle, &outPublic, &creationData, &creationHash, &ticket)
        Esys_Free(outPublic); Esys_Free(creationData); Esys_Free(creationHash); Esys_Free(ticket)
        if [kc_rc_bad_auth, kc_rc_auth_fail].contains(kc_rc_base(rc)) && kc_rc_is_tpm(rc) != 0 {
            throw TPMError.failed(call: "Esys_CreatePrimary", code: rc,
                                  text: "the TPM's owner hierarchy has an authorization value; keychainfs needs it empty")
        }
        if let e = TPMError.check(rc, "Esys_CreatePrimary") { throw e }
        defer { Esys_FlushContext(context, handle) }
        return try body(handle)
    }

    /// Runs `body` with a policy session (or a trial one, to compute a digest) that has the
    /// SHA-256 PCRs in `mask` bound by TPM2_PolicyPCR at their current values; flushes it.
    func withPCRPolicy<R>(mask: UInt32, pcrs: [Int], trial: Bool, _ body: (ESYS_TR) throws -> R) throws -> R {
        var symmetric = TPMT_SYM_DEF()
        kc_sym_null(&symmetric)
        var session: ESYS_TR = kc_tr_none
        let rc = Esys_StartAuthSession(context, kc_tr_none, kc_tr_none, kc_tr_none, kc_tr_none, kc_tr_none, nil,
                                       trial ? kc_se_trial : kc_se_policy, &symmetric, kc_alg_sha256, &session)
        if let e = TPMError.check(rc, "Esys_StartAuthSession") { throw e }
        defer { Esys_FlushContext(context, session) }
        var selection = TPML_PCR_SELECTION()
        kc_pcr_selection(&selection, mask)
        var empty = TPM2B_DIGEST()  // empty: the TPM uses the PCRs' current values
        let prc = Esys_PolicyPCR(context, session, kc_tr_none, kc_tr_none, kc_tr_none, &empty, &selection)
        if let e = TPMError.check(prc, "Esys_PolicyPCR", pcrs: pcrs) { throw e }
        return try body(session)
    }

    /// The name ESYS holds for `object` (for the storage root key: computed from the public area
    /// TPM2_CreatePrimary returned, the key it encrypts session salts to).
    func name(of object: ESYS_TR) throws -> [UInt8] {
        var name: UnsafeMutablePointer<TPM2B_NAME>?
        let rc = Esys_TR_GetName(context, object, &name)
        defer { Esys_Free(name) }
        if let e = TPMError.check(rc, "Esys_TR_GetName") { throw e }
        guard let name else { throw TPMError.failed(call: "Esys_TR_GetName", code: 0, text: "no name") }
        return Array(UnsafeBufferPointer(start: kc_name_bytes(name), count: Int(name.pointee.size)))
    }

    /// Runs `body` with an HMAC session salted to the storage root key `srk` (the salt travels
    /// encrypted to its public key) with AES-128-CFB parameter encryption: `attributes` says
    /// whether it hides the command's first parameter (`kc_session_decrypt`), the response's
    /// (`kc_session_encrypt`) or both. Someone reading the bus sees the nonces and the encrypted
    /// salt, from which the session key cannot be had without the storage root key. Flushed after.
    func withEncryptedSession<R>(salt srk: ESYS_TR, _ attributes: TPMA_SESSION, _ body: (ESYS_TR) throws -> R) throws -> R {
        var symmetric = TPMT_SYM_DEF()
        kc_sym_aes128_cfb(&symmetric)
        var session: ESYS_TR = kc_tr_none
        let rc = Esys_StartAuthSession(context, srk, kc_tr_none, kc_tr_none, kc_tr_none, kc_tr_none, nil,
                                       kc_se_hmac, &symmetric, kc_alg_sha256, &session)
        if let e = TPMError.check(rc, "Esys_StartAuthSession") { throw e }
        defer { Esys_FlushContext(context, session) }
        let mask = kc_session_continue | kc_session_decrypt | kc_session_encrypt
        if let e = TPMError.check(Esys_TRSess_SetAttributes(context, session, kc_session_continue | attributes, mask),
                                  "Esys_TRSess_SetAttributes") { throw e }
        return try body(session)
    }

    /// Checks that the TPM has each PCR of `mask` in its SHA-256 bank (TPM2_PCR_Read, which reads
    /// at most 8 a call and none of a bank that is not allocated): TPM2_PolicyPCR over PCRs it
    /// does not have covers no value, so a key sealed to them would unseal after any change.
    /// - Throws: `TPMError.failed` naming the missing PCRs.
    func checkPCRsAllocated(mask: UInt32) throws {
        var remaining = mask
        while remaining != 0 {
            var selection = TPML_PCR_SELECTION()
            kc_pcr_selection(&selection, remaining)
            var counter: UInt32 = 0
            var out: UnsafeMutablePointer<TPML_PCR_SELECTION>?
            var values: UnsafeMutablePointer<TPML_DIGEST>?
            let rc = Esys_PCR_Read(context, kc_tr_none, kc_tr_none, kc_tr_none, &selection, &counter, &out, &values)
            defer { Esys_Free(out); Esys_Free(values) }
            if let e = TPMError.check(rc, "Esys_PCR_Read") { throw e }
            let read = out.map { kc_pcr_sha256_mask($0) } ?? 0
            guard read & remaining != 0 else {
                let missing = (0..<24).filter { remaining & (1 << UInt32($0)) != 0 }.map(String.init).joined(separator: ",")
                throw TPMError.failed(call: "seal", code: 0, text: "the TPM has no PCR \(missing) in its SHA-256 bank (not allocated): "
                                      + "a policy on it would bind nothing; allocate the bank or seal with --tpm-pcrs none")
            }
            remaining &= ~read
        }
    }

    /// The policy digest that binds `pcrs` at their current values (a trial session), after
    /// checking that the TPM has them.
    func pcrPolicyDigest(mask: UInt32, pcrs: [Int]) throws -> [UInt8] {
        try checkPCRsAllocated(mask: mask)
        return try withPCRPolicy(mask: mask, pcrs: pcrs, trial: true) { session in
            var digest: UnsafeMutablePointer<TPM2B_DIGEST>?
            let rc = Esys_PolicyGetDigest(context, session, kc_tr_none, kc_tr_none, kc_tr_none, &digest)
            defer { Esys_Free(digest) }
            if let e = TPMError.check(rc, "Esys_PolicyGetDigest") { throw e }
            guard let d = digest else { throw TPMError.failed(call: "Esys_PolicyGetDigest", code: 0, text: "no digest") }
            return Array(UnsafeBufferPointer(start: kc_digest_bytes(d), count: Int(d.pointee.size)))
        }
    }

    /// Extends PCR `index` of the SHA-256 bank with `digest` (TPM2_PCR_Extend), as a firmware
    /// update or a changed boot loader would; tests use it.
    public func extendPCR(_ index: Int, with digest: [UInt8]) throws {
        precondition(digest.count == 32 && (0..<24).contains(index))
        var values = TPML_DIGEST_VALUES()
        digest.withUnsafeBufferPointer { kc_sha256_digest_values(&values, $0.baseAddress) }
        let rc = Esys_PCR_Extend(context, kc_tr_pcr0 + ESYS_TR(index), kc_tr_password, kc_tr_none, kc_tr_none, &values)
        if let e = TPMError.check(rc, "Esys_PCR_Extend") { throw e }
    }
}
