import KeychainCore
import KeychainCrypto
import KeychainKeys

/// The attributes Apple derives from a certificate's DER (`SecCertificateCopyAttributeDictionary`),
/// set by the daemon when a `kSecClassCertificate` item is added, so that they always describe
/// the stored bytes whoever sent them: `ctyp`, `cenc`, `issr`, `subj`, `slnr`, `pkhh`, `skid`,
/// and `labl` (the subject summary) unless the caller gave a label.
enum CertificateFacts {
    /// `CSSM_CERT_ENCODING_DER`, the only encoding stored.
    static let derEncoding: Int64 = 3

    static func isCertificateItem(_ query: Attributes) -> Bool {
        if case .string(let name)? = query[.class] { return ItemClass(name: name) == .certificate }
        return false
    }

    /// An add query with the certificate's attributes set from `secret` (its DER); values the
    /// caller gave for them are replaced. Data that is not one DER X.509 certificate (or none)
    /// leaves the query as it is: Apple's securityd stores a certificate item's data and
    /// attributes as given, and only `kSecValueRef` derives them.
    static func addQuery(_ query: Attributes, secret: SecureBytes?) -> Attributes {
        guard isCertificateItem(query), let secret,
              let certificate = try? secret.withUnsafeBytes({ try Certificate(der: Array($0)) }) else { return query }
        var q = query
        q[.certificateType] = .number(certificate.certificateType)
        q[.certificateEncoding] = .number(derEncoding)
        q[.issuer] = .data(certificate.issuerDER)
        q[.subject] = .data(certificate.subjectDER)
        q[.serialNumber] = .data(certificate.serialNumber)
        q[.publicKeyHash] = certificate.publicKeyHash.map(AttributeValue.data)
        q[.subjectKeyID] = certificate.subjectKeyID.map(AttributeValue.data)
        if q[.label] == nil, let summary = certificate.subjectSummary { q[.label] = .string(summary) }
        return q
    }
}
