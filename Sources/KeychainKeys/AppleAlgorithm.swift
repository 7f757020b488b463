import KeychainCrypto
import Synchronization

/// What one of Apple's `SecKeyAlgorithm` names asks a key to do, parsed from its raw string
/// (`algid:sign:ECDSA:digest-X962:SHA256`). Here, not in the Security module, because the
/// daemon runs the same operations on keys whose private half never leaves it.
public enum AppleAlgorithm: Equatable, Sendable {
    /// `hash` nil: a digest of any length (`digest-X962`); `message`: hash the input first.
    case ecdsa(hash: DigestAlgorithm?, message: Bool)
    case rsaSignature(SignatureScheme, hash: DigestAlgorithm?, message: Bool)
    /// `algid:sign:EdDSA:message-Ed25519`, a name of keychainfs's (Apple has no Ed25519 SecKey
    /// algorithm): the message signed whole, as Ed25519 hashes it itself.
    case ed25519
    case rsaEncryption(RSAEncryptionPadding)
    /// `algid:sign:RSA:raw`: the private operation on the input as a number (`rawPrivate`);
    /// verification compares the recovered number, leading zeros dropped, with the input.
    case rsaSignatureRaw
    /// `algid:encrypt:RSA:raw`: the public or private operation on the input as a number.
    case rsaEncryptionRaw
    case ecies(hash: DigestAlgorithm, variableIV: Bool)
    /// `kdf` nil: the bare shared secret.
    case ecdh(kdf: DigestAlgorithm?)

    /// What a key is asked to do (Apple's `SecKeyOperationType`).
    public enum Use: Sendable {
        case sign, verify, encrypt, decrypt, keyExchange
    }

    /// Parses Apple's raw name; nil for an algorithm not offered here (RFC 4754, RSA OAEP with
    /// AES-GCM, MD5). A name parsed before is looked up: every key operation
    /// names its algorithm, in the client and again in the daemon, and splitting the name
    /// costs more than a lookup.
    public init?(rawName: String) {
        if let known = Self.parsed.withLock({ $0[rawName] }) {
            self = known
            return
        }
        guard let algorithm = Self(parsing: rawName) else { return nil }
        // Only names that parse are kept, a few dozen in all; the bound is for safety.
        Self.parsed.withLock { if $0.count < 256 { $0[rawName] = algorithm } }
        self = algorithm
    }

    private static let parsed = Mutex<[String: AppleAlgorithm]>([:])

    private init?(parsing rawName: String) {
        let parts = rawName.split(separator: ":").map(String.init)
        guard parts.count >= 3, parts[0] == "algid" else { return nil }
        switch (parts[1], parts[2]) {
        case ("sign", "ECDSA"):
            guard parts.count >= 4 else { return nil }
            switch (parts[3], parts.count) {
            case ("digest-X962", 4): self = .ecdsa(hash: nil, message: false)
            case ("digest-X962", 5), ("message-X962", 5):
                guard let h = DigestAlgorithm(rawValue: parts[4]) else { return nil }
                self = .ecdsa(hash: h, message: parts[3] == "message-X962")
            default: return nil
            }
        case ("sign", "RSA"):
            guard parts.count >= 4 else { return nil }
            if parts.count == 4 && parts[3] == "raw" { self = .rsaSignatureRaw; return }
            let h = parts.count > 4 ? DigestAlgorithm(rawValue: parts[4]) : nil
            switch (parts[3], parts.count) {
            case ("digest-PKCS1v15", 4): self = .rsaSignature(.pkcs1v15, hash: nil, message: false)
            case ("digest-PKCS1v15", 5), ("message-PKCS1v15", 5):
                guard let h else { return nil }
                self = .rsaSignature(.pkcs1v15, hash: h, message: parts[3] == "message-PKCS1v15")
            case ("digest-PSS", 7), ("message-PSS", 7):
                guard let h, parts[5] == h.rawValue, parts[6] == String(h.length) else { return nil }
                self = .rsaSignature(.pss, hash: h, message: parts[3] == "message-PSS")
            default: return nil
            }
        case ("sign", "EdDSA"):
            guard parts.count == 4, parts[3] == "message-Ed25519" else { return nil }
            self = .ed25519
        case ("encrypt", "RSA"):
            if parts.count == 4 && parts[3] == "PKCS1" { self = .rsaEncryption(.pkcs1); return }
            if parts.count == 4 && parts[3] == "raw" { self = .rsaEncryptionRaw; return }
            guard parts.count == 5, parts[3] == "OAEP", let h = DigestAlgorithm(rawValue: parts[4]) else { return nil }
            self = .rsaEncryption(.oaep(h))
        case ("encrypt", "ECIES"):
            guard parts.count == 7, ["ECDH", "ECDHC"].contains(parts[3]), parts[4] == "KDFX963",
                  let h = DigestAlgorithm(rawValue: parts[5]), ["AESGCM", "AESGCM-KDFIV"].contains(parts[6]) else { return nil }
            self = .ecies(hash: h, variableIV: parts[6] == "AESGCM-KDFIV")
        case ("keyexchange", let kind) where kind == "ECDH" || kind == "ECDHC":
            if parts.count == 3 { self = .ecdh(kdf: nil); return }
            guard parts.count == 5, parts[3] == "KDFX963", let h = DigestAlgorithm(rawValue: parts[4]) else { return nil }
            self = .ecdh(kdf: h)
        default:
            return nil
        }
    }

    /// Whether a key of `kind` runs this for `use`: signing, decryption and key exchange need a
    /// private key; verification and encryption work with either half, as on Apple's platforms.
    public func supports(_ use: Use, kind: KeyKind, isPrivate: Bool) -> Bool {
        let ec: Bool = { if case .ec = kind { return true }; return false }()
        let rsa = kind == .rsa, ed25519 = kind == .ed25519
        switch (self, use) {
        case (.ecdsa, .sign): return ec && isPrivate
        case (.ecdsa, .verify): return ec
        case (.rsaSignature, .sign): return rsa && isPrivate
        case (.rsaSignature, .verify), (.rsaSignatureRaw, .verify): return rsa
        case (.rsaSignatureRaw, .sign): return rsa && isPrivate
        case (.rsaEncryptionRaw, .encrypt): return rsa
        case (.rsaEncryptionRaw, .decrypt): return rsa && isPrivate
        case (.ed25519, .sign): return ed25519 && isPrivate
        case (.ed25519, .verify): return ed25519
        case (.rsaEncryption, .encrypt): return rsa
        case (.rsaEncryption, .decrypt): return rsa && isPrivate
        case (.ecies, .encrypt): return ec
        case (.ecies, .decrypt): return ec && isPrivate
        case (.ecdh, .keyExchange): return ec && isPrivate
        default: return false
        }
    }

    /// The digest a signature covers: the input hashed for `message-` algorithms, else the
    /// input, whose length must then be the named digest's.
    /// - Throws: `invalidInput` for a digest of the wrong length.
    public static func digest(_ input: UnsafeRawBufferPointer, hash: DigestAlgorithm?, message: Bool) throws -> [UInt8] {
        if message, let hash { return hash.hash(input) }
        if let hash, input.count != hash.length { throw KeyError.invalidInput }
        return Array(input)
    }

    // MARK: Operations of a private key

    /// Signs `input` with `key`: DER (X9.62) for ECDSA, modulus-long for RSA, 64 bytes for Ed25519.
    /// - Throws: `unsupported` for an algorithm that does not sign or a key it does not fit,
    ///   `invalidInput` for a digest of the wrong length, or for raw RSA an input longer than
    ///   the modulus or not less than it.
    public func sign(_ input: UnsafeRawBufferPointer, with key: AsymmetricKey) throws -> [UInt8] {
        guard supports(.sign, kind: key.kind, isPrivate: key.isPrivate) else { throw KeyError.unsupported }
        switch self {
        case .ecdsa(let hash, let message):
            return try key.sign(digest: try Self.digest(input, hash: hash, message: message), hash: hash, scheme: .ecdsaX962)
        case .rsaSignature(let scheme, let hash, let message):
            return try key.sign(digest: try Self.digest(input, hash: hash, message: message), hash: hash, scheme: scheme)
        case .ed25519:
            return try key.sign(message: input)
        case .rsaSignatureRaw:
            return try key.rawPrivate(input).withUnsafeBytes { Array($0) }
        default:
            throw KeyError.unsupported
        }
    }

    /// Decrypts `input` with `key` (RSA PKCS1 / OAEP / raw, Apple's ECIES), into guarded memory.
    /// Raw RSA gives the whole modulus-long block, leading zeros kept, as Apple's does.
    /// - Throws: `unsupported`; `decryptionFailed` when it does not decrypt; `invalidInput` for
    ///   a raw input longer than the modulus or not less than it.
    public func decrypt(_ input: UnsafeRawBufferPointer, with key: AsymmetricKey) throws -> SecureBytes {
        guard supports(.decrypt, kind: key.kind, isPrivate: key.isPrivate) else { throw KeyError.unsupported }
        switch self {
        case .rsaEncryption(let padding): return try key.decrypt(input, padding: padding)
        case .rsaEncryptionRaw: return try key.rawPrivate(input)
        case .ecies(let hash, let variableIV): return try ECIES.decrypt(input, with: key, hash: hash, variableIV: variableIV)
        default: throw KeyError.unsupported
        }
    }

    /// ECDH of `key` with `peer`: the shared secret, or with an X9.63 algorithm `requestedSize`
    /// bytes derived from it with `sharedInfo`.
    /// - Throws: `unsupported`; `invalidInput` for keys on different curves or a missing size.
    public func exchange(with key: AsymmetricKey, peer: AsymmetricKey, requestedSize: Int?,
                         sharedInfo: [UInt8]) throws -> SecureBytes {
        guard case .ecdh(let kdf) = self, supports(.keyExchange, kind: key.kind, isPrivate: key.isPrivate) else {
            throw KeyError.unsupported
        }
        guard peer.kind == key.kind else { throw KeyError.invalidInput }
        let z = try key.sharedSecret(with: try peer.publicKey())
        guard let kdf else { return z }
        guard let size = requestedSize, size > 0, size <= 1 << 16 else { throw KeyError.invalidInput }
        return try x963KDF(kdf, secret: z, sharedInfo: sharedInfo, count: size)
    }
}

extension AsymmetricKey {
    /// A key from Apple's external representation and `kSecAttrKeyType` code: 73 (EC, X9.63)
    /// or 42 (RSA, PKCS#1 DER), or from raw bytes for `ed25519TypeCode`.
    /// - Throws: `invalidKeyData`; `unsupported` for another type.
    public static func apple(type: Int64, isPrivate: Bool, _ bytes: UnsafeRawBufferPointer) throws -> AsymmetricKey {
        switch type {
        case 73: return try ec(bytes, isPrivate: isPrivate)
        case 42: return try rsa(bytes, isPrivate: isPrivate)
        case ed25519TypeCode: return try ed25519(bytes, isPrivate: isPrivate)
        default: throw KeyError.unsupported
        }
    }

    /// Apple's `kSecAttrKeyType` code of this key: 73 for EC, 42 for RSA; `ed25519TypeCode`.
    public var appleTypeCode: Int64 {
        switch kind {
        case .ec: return 73
        case .rsa: return 42
        case .ed25519: return Self.ed25519TypeCode
        }
    }
}
