import KeychainModel
import KeychainKeys

/// An X.509 certificate (`SecCertificateRef`), parsed by libcrypto. Certificates compare equal
/// when their DER is the same.
public final class SecCertificate: NSObject, Sendable {
    let certificate: Certificate

    init(_ certificate: Certificate) { self.certificate = certificate }

    public override func isEqual(_ object: Any?) -> Bool {
        (object as? SecCertificate)?.certificate.der == certificate.der
    }

    public override var hash: Int { certificate.der.hashValue }

    public override var description: String {
        "<cert(\(certificate.subjectSummary ?? "?"))>"
    }
}

/// A certificate from its DER (`SecCertificateCreateWithData`); nil for anything that is not
/// exactly one DER X.509 certificate (PEM text included, as on Apple's platforms).
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    (try? Certificate(der: Array(data as Data))).map(SecCertificate.init)
}

/// The certificate's DER (`SecCertificateCopyData`).
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    Data(certificate.certificate.der) as NSData
}

/// A name for people (`SecCertificateCopySubjectSummary`): the subject's common name, else its
/// e-mail address, organizational unit or organization.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? {
    certificate.certificate.subjectSummary.map { $0 as NSString }
}

/// The subject's common name (`SecCertificateCopyCommonName`).
/// - Returns: errSecSuccess; `commonName` is nil when the subject has none.
@discardableResult
public func SecCertificateCopyCommonName(_ certificate: SecCertificate, _ commonName: UnsafeMutablePointer<CFString?>) -> OSStatus {
    commonName.pointee = certificate.certificate.commonName.map { $0 as NSString }
    return errSecSuccess
}

/// The serial number's DER content octets (`SecCertificateCopySerialNumberData`).
public func SecCertificateCopySerialNumberData(_ certificate: SecCertificate,
                                               _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    Data(certificate.certificate.serialNumber) as NSData
}

/// The subject public key (`SecCertificateCopyKey`); nil for a key type this module does not
/// offer (EC curves other than P-256/384/521, DSA, Ed25519).
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? {
    (try? certificate.certificate.publicKey()).map { SecKey($0) }
}

/// The issuer's name in Apple's normalized form, as a DER SEQUENCE
/// (`SecCertificateCopyNormalizedIssuerSequence`): PrintableString values upper-cased and their
/// blanks folded (docs/security-api.md). A certificate item's `kSecAttrIssuer` is the content of
/// this SEQUENCE, without its tag and length; nil when the name is not well formed.
public func SecCertificateCopyNormalizedIssuerSequence(_ certificate: SecCertificate) -> CFData? {
    NormalizedName.sequence(ofName: certificate.certificate.issuerDER).map { Data($0) as NSData }
}

/// The subject's name in Apple's normalized form, as a DER SEQUENCE
/// (`SecCertificateCopyNormalizedSubjectSequence`); a certificate item's `kSecAttrSubject` is its
/// content. Nil when the name is not well formed.
public func SecCertificateCopyNormalizedSubjectSequence(_ certificate: SecCertificate) -> CFData? {
    NormalizedName.sequence(ofName: certificate.certificate.subjectDER).map { Data($0) as NSData }
}
