import KeychainModel
import KeychainCrypto

/// The public-key work of `import`, `export`, `find-certificate` and `find-identity`: reading
/// PEM and DER, digests, PEM writing. libcrypto does it in `keychainfs-daemon` (KeychainKeys),
/// which supplies these verbs' bodies, so the thin `keychainfs` links no libcrypto.
package protocol KeyMaterial: Sendable {
    /// The certificates and keys of a file, in order.
    /// - Throws: `FileRefusal` saying why the file is not one the keychain can take.
    func read(_ file: SecureBytes) throws -> [FileObject]
    /// SHA-1 (or SHA-256) of `bytes`.
    func digest(_ bytes: [UInt8], sha256: Bool) -> [UInt8]
    /// What a DER certificate says of itself; nil when `der` is not one certificate.
    func certificate(_ der: [UInt8]) -> CertificateInfo?
    /// A public key in Apple's representation (`type` 73 EC, 42 RSA) as SubjectPublicKeyInfo:
    /// PEM text (as `openssl pkey -pubout` writes it) or DER.
    func subjectPublicKeyInfo(type: Int64, apple: [UInt8], pem: Bool) throws -> [UInt8]
}

/// Why a key or certificate file is refused.
package struct FileRefusal: Error {
    package let reason: String
    /// Neither PEM nor any DER object: perhaps a damaged backup, which the backup import names.
    package let unrecognised: Bool
    package init(_ reason: String, unrecognised: Bool = false) {
        self.reason = reason
        self.unrecognised = unrecognised
    }
}

/// One object of a key or certificate file.
package enum FileObject: Sendable {
    case certificate(der: [UInt8], info: CertificateInfo)
    case key(KeyObject)
}

/// A key read from a file: the facts Apple derives from it, and its bytes in Apple's external
/// representation (X9.63 for EC, PKCS#1 for RSA), in guarded memory.
package struct KeyObject: Sendable {
    package var isPrivate: Bool
    package var type: Int64
    package var bits: Int64
    /// SHA-1 of the public key's Apple representation: Apple's application label (`klbl`).
    package var applicationLabel: [UInt8]
    package var bytes: SecureBytes

    package init(isPrivate: Bool, type: Int64, bits: Int64, applicationLabel: [UInt8], bytes: SecureBytes) {
        self.isPrivate = isPrivate
        self.type = type
        self.bits = bits
        self.applicationLabel = applicationLabel
        self.bytes = bytes
    }

    /// The attributes Apple's `SecKeyCopyAttributeDictionary` gives a key, as the `Security`
    /// module stores them for `SecItemAdd` of a `SecKey` (its `KeyItems.keyAttributes`).
    var attributes: Attributes {
        var a: Attributes = [
            .class: .itemClass(.key), .keyClass: .number(isPrivate ? 1 : 0), .applicationLabel: .data(applicationLabel), .keyType: .number(type),
            .keySizeInBits: .number(bits), .effectiveKeySize: .number(bits),
            .isPermanent: .bool(true), .isPrivate: .bool(true), .isModifiable: .bool(true), .isSensitive: .bool(false),
            .alwaysSensitive: .bool(false), .isExtractable: .bool(true), .neverExtractable: .bool(false), .canDerive: .bool(true),
            .canSignRecover: .bool(false), .canVerifyRecover: .bool(false),
        ]
        let usage: [(AttributeKey, Bool)] = [(.canEncrypt, false), (.canDecrypt, true), (.canSign, true), (.canVerify, false),
                                             (.canWrap, false), (.canUnwrap, true)]
        for (flag, onPrivate) in usage {
            a[flag] = .bool(onPrivate == isPrivate)
        }
        return a
    }
}

/// What a certificate says of itself, for the certificate verbs.
package struct CertificateInfo: Sendable {
    /// Apple's subject summary (the label the daemon gives it).
    package var summary: String?
    package var commonName: String?
    package var emailAddresses: [String]
    /// nil when now is inside the validity period, else macOS's reason
    /// (`CSSMERR_TP_CERT_EXPIRED`, `CSSMERR_TP_CERT_NOT_VALID_YET`).
    package var invalidReason: String?
    /// SHA-1 of the subject public key's Apple representation (`pkhh`).
    package var publicKeyHash: [UInt8]?
    package var pem: [UInt8]

    package init(summary: String?, commonName: String?, emailAddresses: [String], invalidReason: String?,
                 publicKeyHash: [UInt8]?, pem: [UInt8]) {
        self.summary = summary
        self.commonName = commonName
        self.emailAddresses = emailAddresses
        self.invalidReason = invalidReason
        self.publicKeyHash = publicKeyHash
        self.pem = pem
    }
}
