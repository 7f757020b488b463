import KeychainCLI
import KeychainCrypto
import KeychainKeys

/// The certificate verbs' public-key work (`KeyMaterial`) done by libcrypto through
/// KeychainKeys, in this executable only: the thin `keychainfs` links no libcrypto.
struct OpenSSLMaterial: KeyMaterial {
    func read(_ file: SecureBytes) throws -> [FileObject] {
        let objects: [KeyFileObject]
        do {
            objects = try KeyFile.read(file)
        } catch let e as KeyFileError {
            throw FileRefusal(e.description, unrecognised: e == .notKeyOrCertificate)
        }
        return try objects.map { object in
            switch object {
            case .certificate(let c):
                guard let info = certificate(c.der) else { throw FileRefusal("its certificate has no PEM form") }
                return .certificate(der: c.der, info: info)
            case .privateKey(let key):
                return .key(KeyObject(isPrivate: true, type: key.appleTypeCode, bits: Int64(key.sizeInBits),
                                      applicationLabel: DigestAlgorithm.sha1.hash(key.publicBytes()), bytes: try key.privateBytes()))
            case .publicKey(let key):
                let bytes = key.publicBytes()
                return .key(KeyObject(isPrivate: false, type: key.appleTypeCode, bits: Int64(key.sizeInBits),
                                      applicationLabel: DigestAlgorithm.sha1.hash(bytes), bytes: try SecureBytes(copying: bytes)))
            }
        }
    }

    func digest(_ bytes: [UInt8], sha256: Bool) -> [UInt8] {
        (sha256 ? DigestAlgorithm.sha256 : .sha1).hash(bytes)
    }

    func certificate(_ der: [UInt8]) -> CertificateInfo? {
        guard let c = try? Certificate(der: der), let copy = try? SecureBytes(copying: der),
              let pem = try? PEM.certificate(der: copy) else { return nil }
        defer { pem.wipe() }
        let reason: String?
        switch c.validity {
        case .valid: reason = nil
        case .expired: reason = "CSSMERR_TP_CERT_EXPIRED"
        case .notYetValid: reason = "CSSMERR_TP_CERT_NOT_VALID_YET"
        }
        return CertificateInfo(summary: c.subjectSummary, commonName: c.commonName, emailAddresses: c.emailAddresses,
                               invalidReason: reason, publicKeyHash: c.publicKeyHash, pem: pem.withUnsafeBytes { Array($0) })
    }

    func subjectPublicKeyInfo(type: Int64, apple: [UInt8], pem: Bool) throws -> [UInt8] {
        let key = try apple.withUnsafeBytes { try AsymmetricKey.apple(type: type, isPrivate: false, $0) }
        return pem ? try PEM.publicKey(key) : try PEM.publicKeyDER(key)
    }
}
