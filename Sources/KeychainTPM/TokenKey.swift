import CTSS2
import KeychainCore
import KeychainCrypto

/// A P-256 private key made inside the TPM (`kSecAttrTokenIDSecureEnclave`): the keychain item
/// holds only `blob`, its public and private areas wrapped by this TPM's storage root key, which
/// no other TPM and no software can use. Signing happens in the TPM.
public struct TokenKey: Sendable {
    static let magic: [UInt8] = Array("KCFSTPK".utf8) + [0]
    var object: SealedKey.Object

    /// The public key in Apple's external representation, `04 || X || Y`.
    public let publicPoint: [UInt8]

    /// The storage root key's name when the key was made (format 2), checked before each use as
    /// the sealed device key's is; nil in a format 1 blob.
    var rootName: [UInt8]?

    /// What the keychain item stores.
    public var blob: [UInt8] {
        var w = ByteWriter()
        w.raw(TokenKey.magic)
        w.u16(rootName == nil ? 1 : 2)
        w.lengthPrefixed(object.publicArea)
        w.lengthPrefixed(object.privateArea)
        w.lengthPrefixed(publicPoint)
        if let rootName { w.lengthPrefixed(rootName) }
        return w.bytes
    }

    public init(blob: [UInt8]) throws {
        let parsed: (SealedKey.Object, [UInt8], [UInt8]?) = try blob.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            do {
                guard try r.raw(TokenKey.magic.count) == TokenKey.magic else { throw SealedKey.ParseError.malformed }
                let format = try r.u16()
                guard format == 1 || format == 2 else { throw SealedKey.ParseError.malformed }
                let o = SealedKey.Object(publicArea: try r.lengthPrefixed(), privateArea: try r.lengthPrefixed())
                let point = try r.lengthPrefixed()
                let name = format == 2 ? try r.lengthPrefixed() : nil
                guard r.remaining == 0, point.count == 65, name.map({ !$0.isEmpty && $0.count <= 66 }) ?? true else {
                    throw SealedKey.ParseError.malformed
                }
                return (o, point, name)
            } catch is ByteReader.Truncated { throw SealedKey.ParseError.malformed }
        }
        object = parsed.0
        publicPoint = parsed.1
        rootName = parsed.2
    }

    init(object: SealedKey.Object, publicPoint: [UInt8], rootName: [UInt8]) {
        self.object = object
        self.publicPoint = publicPoint
        self.rootName = rootName
    }
}

extension TPM {
    /// Makes a P-256 key inside the TPM under the storage root key (Esys_Create).
    public func createTokenKey() throws -> TokenKey {
        try withPrimary { srk in
            var template = TPM2B_PUBLIC()
            kc_ecc_token_key_template(&template)
            var sensitive = TPM2B_SENSITIVE_CREATE()
            var outside = TPM2B_DATA()
            var creation = TPML_PCR_SELECTION()
            var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
            var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
            var creationData: UnsafeMutablePointer<TPM2B_CREATION_DATA>?
            var creationHash: UnsafeMutablePointer<TPM2B_DIGEST>?
            var ticket: UnsafeMutablePointer<TPMT_TK_CREATION>?
            let rc = Esys_Create(context, srk, kc_tr_password, kc_tr_none, kc_tr_none, &sensitive, &template, &outside, &creation,
                                 &outPrivate, &outPublic, &creationData, &creationHash, &ticket)
            defer { Esys_Free(outPrivate); Esys_Free(outPublic); Esys_Free(creationData); Esys_Free(creationHash); Esys_Free(ticket) }
            if let e = TPMError.check(rc, "Esys_Create") { throw e }
            guard let outPrivate, let outPublic else { throw TPMError.failed(call: "Esys_Create", code: 0, text: "no object") }
            var xl = 0, yl = 0
            let x = kc_ecc_x(outPublic, &xl), y = kc_ecc_y(outPublic, &yl)
            guard xl == 32, yl == 32, let x, let y else { throw TPMError.failed(call: "Esys_Create", code: 0, text: "not a P-256 point") }
            let point: [UInt8] = [0x04] + Array(UnsafeBufferPointer(start: x, count: 32)) + Array(UnsafeBufferPointer(start: y, count: 32))
            return TokenKey(object: SealedKey.Object(publicArea: try marshal(outPublic, Tss2_MU_TPM2B_PUBLIC_Marshal),
                                                     privateArea: try marshal(outPrivate, Tss2_MU_TPM2B_PRIVATE_Marshal)),
                            publicPoint: point, rootName: try name(of: srk))
        }
    }

    /// Signs a SHA-256 digest with the token key (Esys_Sign, ECDSA); returns the X9.62 DER
    /// signature Apple's `ecdsaSignature...X962SHA256` algorithms give.
    public func sign(digest: [UInt8], with key: TokenKey) throws -> [UInt8] {
        precondition(digest.count == 32)
        return try withPrimary { srk in
            try checkRoot(srk, key.rootName)
            return try withLoaded(key.object, under: srk) { handle in
                var d = TPM2B_DIGEST()
                _ = digest.withUnsafeBufferPointer { kc_digest(&d, $0.baseAddress, $0.count) }
                var scheme = TPMT_SIG_SCHEME()
                var ticket = TPMT_TK_HASHCHECK()
                kc_ecdsa_sha256(&scheme, &ticket)
                var signature: UnsafeMutablePointer<TPMT_SIGNATURE>?
                let rc = Esys_Sign(context, handle, kc_tr_password, kc_tr_none, kc_tr_none, &d, &scheme, &ticket, &signature)
                defer { Esys_Free(signature) }
                if let e = TPMError.check(rc, "Esys_Sign") { throw e }
                guard let signature else { throw TPMError.failed(call: "Esys_Sign", code: 0, text: "no signature") }
                var rl = 0, sl = 0
                let r = kc_sig_r(signature, &rl), s = kc_sig_s(signature, &sl)
                return DERSignature.encode(r: Array(UnsafeBufferPointer(start: r, count: rl)),
                                           s: Array(UnsafeBufferPointer(start: s, count: sl)))
            }
        }
    }
}

extension TPM {
    /// The ECDH shared secret (the x-coordinate of the shared point) of the token key and a peer's
    /// public point `04 || X || Y`, computed in the TPM (Esys_ECDH_ZGen); the TSS's buffer is
    /// zeroed before it is freed.
    /// - Throws: `TPMError.failed` for a point the TPM rejects (not on P-256).
    public func sharedSecret(peer point: [UInt8], with key: TokenKey) throws -> SecureBytes {
        precondition(point.count == 65 && point[0] == 4)
        return try withPrimary { srk in
            try checkRoot(srk, key.rootName)
            return try withLoaded(key.object, under: srk) { handle in
                var peer = TPM2B_ECC_POINT()
                _ = point.withUnsafeBufferPointer { p in kc_ecc_point(&peer, p.baseAddress! + 1, p.baseAddress! + 33, 32) }
                var shared: UnsafeMutablePointer<TPM2B_ECC_POINT>?
                // The shared secret is the response's first parameter: hidden on the bus.
                let rc = try withEncryptedSession(salt: srk, kc_session_encrypt) { hide in
                    Esys_ECDH_ZGen(context, handle, kc_tr_password, hide, kc_tr_none, &peer, &shared)
                }
                defer {
                    if let shared { explicit_bzero(shared, MemoryLayout<TPM2B_ECC_POINT>.size) }
                    Esys_Free(shared)
                }
                if let e = TPMError.check(rc, "Esys_ECDH_ZGen") { throw e }
                guard let shared else { throw TPMError.failed(call: "Esys_ECDH_ZGen", code: 0, text: "no point") }
                var n = 0
                let x = kc_point_x(shared, &n)
                return try SecureBytes(copying: UnsafeRawBufferPointer(start: x, count: n))
            }
        }
    }
}

/// ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }, as X9.62 and Apple write it.
enum DERSignature {
    static func encode(r: [UInt8], s: [UInt8]) -> [UInt8] {
        let body = integer(r) + integer(s)
        return [0x30] + length(body.count) + body
    }

    private static func integer(_ bytes: [UInt8]) -> [UInt8] {
        var v = Array(bytes.drop { $0 == 0 })
        if v.isEmpty { v = [0] }
        if v[0] & 0x80 != 0 { v.insert(0, at: 0) }
        return [0x02] + length(v.count) + v
    }

    private static func length(_ n: Int) -> [UInt8] { n < 0x80 ? [UInt8(n)] : [0x81, UInt8(n)] }
}
