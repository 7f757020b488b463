import COpenSSL

/// An X.509 certificate parsed by libcrypto (`d2i_X509`), for Apple's `SecCertificate` and the
/// attributes Apple derives from a certificate's DER. Immutable.
public final class Certificate: @unchecked Sendable {
    // Unchecked: an X509 never changed after parsing, which libcrypto reads from any thread.
    private let x509: OpaquePointer
    /// The DER the certificate was made from.
    public let der: [UInt8]

    /// Parses `der`, which must be exactly one DER certificate.
    /// - Throws: `invalidKeyData` for anything else (PEM, garbage, trailing bytes).
    public init(der: [UInt8]) throws {
        _ = LibCrypto.ready
        guard !der.isEmpty else { throw KeyError.invalidKeyData }
        var end: UnsafePointer<UInt8>?
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let x = d2i_X509(nil, &cursor, buffer.count)
            end = cursor
            return x
        }
        let x = try LibCrypto.notNil(parsed, .invalidKeyData)
        let consumed = der.withUnsafeBufferPointer { buffer in end.map { $0 - buffer.baseAddress! } ?? 0 }
        guard consumed == der.count else {
            X509_free(x)
            throw KeyError.invalidKeyData
        }
        x509 = x
        self.der = der
    }

    deinit { X509_free(x509) }

    /// Runs `body` with libcrypto's certificate, kept alive meanwhile.
    func withX509<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(x509) }
    }

    /// The DER of the subject name, as the certificate holds it.
    public var subjectDER: [UInt8] { Self.encode(X509_get_subject_name(x509)) }
    /// The DER of the issuer name, as the certificate holds it.
    public var issuerDER: [UInt8] { Self.encode(X509_get_issuer_name(x509)) }

    /// Apple's `subj` attribute: the subject's normalized content (`NormalizedName`), nil when
    /// the name is not well formed.
    public var normalizedSubject: [UInt8]? { NormalizedName.content(ofName: subjectDER) }
    /// Apple's `issr` attribute: the issuer's normalized content (`NormalizedName`), nil when
    /// the name is not well formed.
    public var normalizedIssuer: [UInt8]? { NormalizedName.content(ofName: issuerDER) }

    /// The serial number's content octets, as DER writes the INTEGER (a leading zero byte when
    /// the high bit is set), as `SecCertificateCopySerialNumberData` and `slnr` give it.
    public var serialNumber: [UInt8] {
        let length = i2d_ASN1_INTEGER(X509_get0_serialNumber(x509), nil)
        guard length > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_ASN1_INTEGER(X509_get0_serialNumber(x509), &cursor)
        }
        return Self.contentOctets(out)
    }

    /// Apple's `ctyp`: `CSSM_CERT_X_509v1`...`v3` (1-3), the X.509 version field plus one, as
    /// `SecCertificateCopyAttributeDictionary` sets it.
    public var certificateType: Int64 { Int64(X509_get_version(x509)) + 1 }

    /// The subject key identifier extension's key identifier, or nil when it has none (`skid`).
    public var subjectKeyID: [UInt8]? {
        guard let id = X509_get0_subject_key_id(x509), let bytes = ASN1_STRING_get0_data(id) else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(id))))
    }

    /// SHA-1 of the subject public key in Apple's external representation (`pkhh`): the same
    /// value as the private key's application label (`klbl`), which joins the two in an identity.
    /// Nil for a key type this library does not read.
    public var publicKeyHash: [UInt8]? {
        (try? publicKey()).map { DigestAlgorithm.sha1.hash($0.publicBytes()) }
    }

    /// The subject's last common name, or nil when it has none.
    public var commonName: String? { Self.lastEntry(X509_get_subject_name(x509), nid: NID_commonName) }

    /// A name for people, as Apple's `SecCertificateCopySubjectSummary` chooses one: the common
    /// name, else the e-mail address, else the organizational unit, else the organization.
    public var subjectSummary: String? {
        let name = X509_get_subject_name(x509)
        for nid in [NID_commonName, NID_pkcs9_emailAddress, NID_organizationalUnitName, NID_organizationName] {
            if let value = Self.lastEntry(name, nid: nid), !value.isEmpty { return value }
        }
        return nil
    }

    /// The subject public key (`X509_get_pubkey`).
    /// - Throws: `unsupported` for a key other than RSA or EC on P-256, P-384, P-521.
    public func publicKey() throws -> AsymmetricKey {
        let pkey = try LibCrypto.notNil(X509_get_pubkey(x509), .unsupported)
        let kind: KeyKind
        switch EVP_PKEY_get_base_id(pkey) {
        case kc_pkey_rsa:
            kind = .rsa
        case kc_pkey_ec:
            guard let curve = Curve(rawValue: Int(EVP_PKEY_get_bits(pkey))) else {
                EVP_PKEY_free(pkey)
                throw KeyError.unsupported
            }
            kind = .ec(curve)
        default:
            EVP_PKEY_free(pkey)
            throw KeyError.unsupported
        }
        let key = AsymmetricKey(pkey, kind: kind, isPrivate: false)
        if case .rsa = kind, !AsymmetricKey.rsaSizes.contains(key.sizeInBits) { throw KeyError.unsupported }
        return key
    }

    private static func encode(_ name: OpaquePointer?) -> [UInt8] {
        let length = i2d_X509_NAME(name, nil)
        guard length > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_X509_NAME(name, &cursor)
        }
        return out
    }

    private static func lastEntry(_ name: OpaquePointer?, nid: Int32) -> String? {
        var index: Int32 = -1
        var last: Int32 = -1
        while true {
            index = X509_NAME_get_index_by_NID(name, nid, index)
            if index < 0 { break }
            last = index
        }
        guard last >= 0, let entry = X509_NAME_get_entry(name, last), let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { CRYPTO_free(utf8, #file, #line) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    /// The content of a DER TLV (after the tag and the length).
    private static func contentOctets(_ tlv: [UInt8]) -> [UInt8] {
        guard tlv.count >= 2 else { return [] }
        let first = Int(tlv[1])
        let header = first < 0x80 ? 2 : 2 + (first & 0x7f)
        return header <= tlv.count ? Array(tlv[header...]) : []
    }
}
