import KeychainCore
import KeychainCrypto
import KeychainKeys

/// The attributes Apple derives from a certificate's DER (`SecCertificateCopyAttributeDictionary`),
/// set by the daemon when a `kSecClassCertificate` item is added or its data replaced, so that
/// they always describe the stored bytes whoever sent them: `ctyp`, `cenc`, `issr`, `subj`,
/// `slnr`, `pkhh`, `skid`, and at an add `labl` (the subject summary) unless the caller gave a
/// label. `issr` and `subj` are Apple's normalized names (`NormalizedName`), and an issuer a
/// caller gives as a whole Name (a DER SEQUENCE) is normalized in every request, as Apple's
/// `SecItemAttributesPrepare` does, so that the DER of a certificate's issuer finds it.
enum CertificateFacts {
    /// `CSSM_CERT_ENCODING_DER`, the only encoding stored.
    static let derEncoding: Int64 = 3

    static func isCertificateItem(_ query: Attributes) -> Bool {
        if case .string(let name)? = query[.class] { return ItemClass(name: name) == .certificate }
        if case .data(let bytes)? = query[.valuePersistentRef] { return PersistentRef(bytes: bytes)?.itemClass == .certificate }
        return false
    }

    /// An add query with the certificate's attributes set from `secret` (its DER); values the
    /// caller gave for them are replaced. Data that is not one DER X.509 certificate (or none)
    /// leaves the query as it is, but for its issuer (`normalizingIssuer`): Apple's securityd
    /// stores a certificate item's data and attributes as given, and only `kSecValueRef`
    /// derives them.
    static func addQuery(_ query: Attributes, secret: SecureBytes?) -> Attributes {
        guard isCertificateItem(query), let certificate = parse(secret) else { return normalizingIssuer(query) }
        var q = query
        for (k, v) in derived(certificate) { q[k] = v }
        if q[.label] == nil, let summary = certificate.subjectSummary { q[.label] = .string(summary) }
        return q
    }

    /// Update changes of certificate items: new data that is a DER certificate brings the
    /// attributes derived from it, replacing any the caller gave (the label stays, as Apple's
    /// attribute dictionary has none); other data leaves the attributes as they are.
    static func changes(_ changes: Attributes, query: Attributes, secret: SecureBytes?) -> Attributes {
        guard isCertificateItem(query), let certificate = parse(secret) else { return normalizingIssuer(changes) }
        var c = changes
        for (k, v) in derived(certificate) { c[k] = v }
        return c
    }

    /// `attributes` with an `issr` given as a whole Name (tag SEQUENCE) replaced by its
    /// normalized content; any other value, or one that is not a well-formed Name, as given.
    static func normalizingIssuer(_ attributes: Attributes) -> Attributes {
        guard case .data(let issuer)? = attributes[.issuer], issuer.first == 0x30,
              let normalized = NormalizedName.content(ofName: issuer) else { return attributes }
        var a = attributes
        a[.issuer] = .data(normalized)
        return a
    }

    /// What Apple's attribute dictionary holds for `certificate`; `skid`, `pkhh`, `issr` and
    /// `subj` are absent (nil, which removes a value the caller gave) when it has none.
    static func derived(_ certificate: Certificate) -> [AttributeKey: AttributeValue?] {
        [.certificateType: .number(certificate.certificateType), .certificateEncoding: .number(derEncoding),
         .issuer: certificate.normalizedIssuer.map(AttributeValue.data), .subject: certificate.normalizedSubject.map(AttributeValue.data),
         .serialNumber: .data(certificate.serialNumber), .publicKeyHash: certificate.publicKeyHash.map(AttributeValue.data),
         .subjectKeyID: certificate.subjectKeyID.map(AttributeValue.data)]
    }

    private static func parse(_ secret: SecureBytes?) -> Certificate? {
        guard let secret else { return nil }
        return try? secret.withUnsafeBytes { try Certificate(der: Array($0)) }
    }
}
