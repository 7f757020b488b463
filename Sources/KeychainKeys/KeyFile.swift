import COpenSSL
import KeychainCrypto

/// One object of a key or certificate file, as `security import` takes them.
public enum KeyFileObject: Sendable {
    case certificate(Certificate)
    /// A private key; its Apple representation comes from `privateBytes()`.
    case privateKey(AsymmetricKey)
    case publicKey(AsymmetricKey)
}

/// Why a file could not be read as keys and certificates; nothing of it is kept.
public enum KeyFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A passphrase-protected key (`ENCRYPTED PRIVATE KEY`, or a `Proc-Type: 4,ENCRYPTED` header).
    case encrypted
    /// A PEM block of a kind this reads not (`-----BEGIN name-----`).
    case unknownBlock(String)
    /// A PEM block or DER that does not decode as what it says, or a key type, curve or size
    /// the keychain does not hold.
    case undecodable(String)
    /// Neither PEM nor one DER certificate or key.
    case notKeyOrCertificate
    /// PEM text without a single block.
    case empty

    public var description: String {
        switch self {
        case .encrypted:
            return "it holds an encrypted private key; decrypt it first (openssl pkey -in FILE -out PLAIN)"
        case .unknownBlock(let name):
            return "it holds a \"\(name)\" PEM block; only certificates, private keys (PKCS#8, SEC 1 EC, PKCS#1 RSA) and public keys are read"
        case .undecodable(let name):
            return "its \(name) does not decode, or is a key type, curve or size the keychain does not hold (EC P-256, P-384, P-521; RSA 1024-4096)"
        case .notKeyOrCertificate:
            return "it is neither PEM nor a DER certificate, private key or public key"
        case .empty:
            return "it holds no PEM block"
        }
    }
}

/// Certificates and keys read from PEM text or DER by libcrypto (`PEM_read_bio_ex`, `d2i_X509`,
/// `d2i_AutoPrivateKey`, `d2i_PUBKEY`). PEM blocks are decoded into libcrypto's secure heap.
public enum KeyFile {
    /// Every object of `file`: the PEM blocks in order (`EC PARAMETERS` blocks skipped), or one
    /// DER certificate, private key (PKCS#8, SEC 1, PKCS#1) or public key (SubjectPublicKeyInfo).
    /// Keys are checked by a round trip through Apple's representation, so a key the keychain
    /// could not use (another curve, an RSA size out of range) is refused here.
    /// - Throws: `KeyFileError`.
    public static func read(_ file: SecureBytes) throws -> [KeyFileObject] {
        _ = LibCrypto.ready
        let isPEM = file.withUnsafeBytes { raw in
            let marker = Array("-----BEGIN ".utf8)
            return raw.count >= marker.count && (0...(raw.count - marker.count)).contains { i in
                raw[i] == marker[0] && marker.indices.allSatisfy { raw[i + $0] == marker[$0] }
            }
        }
        return isPEM ? try pemObjects(file) : [try derObject(file)]
    }

    private static func pemObjects(_ file: SecureBytes) throws -> [KeyFileObject] {
        try file.withUnsafeBytes { raw -> [KeyFileObject] in
            let bio = try LibCrypto.notNil(BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)), .invalidKeyData)
            defer { BIO_free(bio) }
            var out: [KeyFileObject] = []
            while true {
                var name: UnsafeMutablePointer<CChar>?
                var header: UnsafeMutablePointer<CChar>?
                var data: UnsafeMutablePointer<UInt8>?
                var length = 0
                guard PEM_read_bio_ex(bio, &name, &header, &data, &length, UInt32(PEM_FLAG_SECURE | PEM_FLAG_EAY_COMPATIBLE)) == 1 else {
                    ERR_clear_error()  // the end of the text, or a block whose base64 is broken
                    break
                }
                defer {  // PEM_FLAG_SECURE puts all three on the secure heap
                    CRYPTO_secure_free(name, #file, #line)
                    CRYPTO_secure_free(header, #file, #line)
                    CRYPTO_secure_clear_free(data, length, #file, #line)
                }
                let label = name.map { String(cString: $0) } ?? ""
                let headerText = header.map { String(cString: $0) } ?? ""
                if headerText.contains("ENCRYPTED") || label == "ENCRYPTED PRIVATE KEY" { throw KeyFileError.encrypted }
                if label == "EC PARAMETERS" { continue }
                guard let data else { throw KeyFileError.undecodable(label) }
                let bytes = UnsafeRawBufferPointer(start: data, count: length)
                switch label {
                case "CERTIFICATE", "X509 CERTIFICATE":
                    guard let c = try? Certificate(der: Array(bytes)) else { throw KeyFileError.undecodable("certificate") }
                    out.append(.certificate(c))
                case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
                    guard let key = try privateKey(bytes) else { throw KeyFileError.undecodable("private key") }
                    out.append(.privateKey(key))
                case "PUBLIC KEY", "RSA PUBLIC KEY":
                    guard let key = publicKey(bytes, pkcs1: label == "RSA PUBLIC KEY") else { throw KeyFileError.undecodable("public key") }
                    out.append(.publicKey(key))
                default:
                    throw KeyFileError.unknownBlock(label)
                }
            }
            guard !out.isEmpty else { throw KeyFileError.empty }
            return out
        }
    }

    private static func derObject(_ file: SecureBytes) throws -> KeyFileObject {
        try file.withUnsafeBytes { raw in
            // Keys first, read in place: only bytes that are no private key are copied out.
            if let key = try privateKey(raw) { return .privateKey(key) }
            if let key = publicKey(raw, pkcs1: false) ?? publicKey(raw, pkcs1: true) { return .publicKey(key) }
            if let c = try? Certificate(der: Array(raw)) { return .certificate(c) }
            throw KeyFileError.notKeyOrCertificate
        }
    }

    /// A private key of any of libcrypto's DER forms, every byte used, checked by Apple's form;
    /// nil for bytes that are no private key.
    /// - Throws: `undecodable` for a private key of a kind the keychain does not hold (its
    ///   bytes are then not tried as anything else, which would copy them).
    private static func privateKey(_ der: UnsafeRawBufferPointer) throws -> AsymmetricKey? {
        guard let base = der.baseAddress, der.count > 0 else { return nil }
        var cursor: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
        guard let pkey = d2i_AutoPrivateKey(nil, &cursor, der.count) else {
            ERR_clear_error()
            return nil
        }
        defer { EVP_PKEY_free(pkey) }
        guard let end = cursor, UnsafeRawPointer(end) == base + der.count,
              let key = appleForm(pkey, isPrivate: true) else { throw KeyFileError.undecodable("private key") }
        return key
    }

    /// A public key: SubjectPublicKeyInfo, or with `pkcs1` an `RSAPublicKey`.
    private static func publicKey(_ der: UnsafeRawBufferPointer, pkcs1: Bool) -> AsymmetricKey? {
        guard let base = der.baseAddress, der.count > 0 else { return nil }
        var cursor: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
        let decoded = pkcs1 ? d2i_PublicKey(kc_pkey_rsa, nil, &cursor, der.count) : d2i_PUBKEY(nil, &cursor, der.count)
        guard let pkey = decoded else {
            ERR_clear_error()
            return nil
        }
        defer { EVP_PKEY_free(pkey) }
        guard let end = cursor, UnsafeRawPointer(end) == base + der.count else { return nil }
        return appleForm(pkey, isPrivate: false)
    }

    /// The key made again from its Apple representation: the curve is then one of Apple's by
    /// its point (a secp256k1 key has 256 bits too, but its point is not on P-256), and the
    /// private half belongs to the public one.
    private static func appleForm(_ pkey: OpaquePointer, isPrivate: Bool) -> AsymmetricKey? {
        let type: Int64
        switch EVP_PKEY_get_base_id(pkey) {
        case kc_pkey_rsa: type = 42
        case kc_pkey_ec: type = 73
        default: return nil
        }
        // A borrowed view: `kind` only chooses the encoder; the result is re-parsed below.
        guard EVP_PKEY_up_ref(pkey) == 1 else { return nil }
        let kind: KeyKind = type == 42 ? .rsa : .ec(Curve(rawValue: Int(EVP_PKEY_get_bits(pkey))) ?? .p256)
        let view = AsymmetricKey(pkey, kind: kind, isPrivate: isPrivate)
        if case .ec(let curve) = kind, curve.rawValue != view.sizeInBits { return nil }
        if isPrivate {
            guard let bytes = try? view.privateBytes() else { return nil }
            defer { bytes.wipe() }
            return try? bytes.withUnsafeBytes { try AsymmetricKey.apple(type: type, isPrivate: true, $0) }
        }
        let bytes = view.publicBytes()
        return try? bytes.withUnsafeBytes { try AsymmetricKey.apple(type: type, isPrivate: false, $0) }
    }
}

extension PEM {
    /// A public key as SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`), as
    /// `openssl pkey -pubout` writes it.
    public static func publicKey(_ key: AsymmetricKey) throws -> [UInt8] {
        let pem = try write { PEM_write_bio_PUBKEY($0, key.pkey) }
        defer { pem.wipe() }
        return pem.withUnsafeBytes { Array($0) }
    }

    /// A public key as SubjectPublicKeyInfo DER (`i2d_PUBKEY`).
    public static func publicKeyDER(_ key: AsymmetricKey) throws -> [UInt8] {
        let length = i2d_PUBKEY(key.pkey, nil)
        guard length > 0 else { throw KeyError.library }
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_PUBKEY(key.pkey, &cursor)
        }
        return out
    }
}

extension Certificate {
    /// Where now falls in the validity period: `valid`, `expired` or `notYetValid`
    /// (`X509_cmp_current_time` of notBefore and notAfter).
    public enum Validity: Sendable { case valid, expired, notYetValid }

    public var validity: Validity {
        withX509 { x in
            if X509_cmp_current_time(X509_get0_notBefore(x)) >= 0 { return .notYetValid }
            if X509_cmp_current_time(X509_get0_notAfter(x)) <= 0 { return .expired }
            return .valid
        }
    }

    /// The e-mail addresses of the subject and of its alternative names (`X509_get1_email`).
    public var emailAddresses: [String] {
        withX509 { x in
            guard let stack = X509_get1_email(x) else { return [] }
            defer { X509_email_free(stack) }
            return (0..<OPENSSL_sk_num(stack)).compactMap { i in
                OPENSSL_sk_value(stack, i).map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
            }
        }
    }
}
