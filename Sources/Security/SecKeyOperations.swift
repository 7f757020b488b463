import KeychainCrypto
import KeychainKeys

/// What an algorithm name asks a key to do.
enum KeyAlgorithmSpec {
    /// `hash` nil: a digest of any length (`digest-X962`); `message`: hash the input first.
    case ecdsa(hash: DigestAlgorithm?, message: Bool)
    case rsaSignature(SignatureScheme, hash: DigestAlgorithm?, message: Bool)
    case rsaEncryption(RSAEncryptionPadding)
    case ecies(hash: DigestAlgorithm, variableIV: Bool)
    /// `kdf` nil: the bare shared secret.
    case ecdh(kdf: DigestAlgorithm?)

    /// Parses Apple's raw name; nil for an algorithm not offered here (raw RSA, RFC 4754,
    /// RSA OAEP with AES-GCM, MD5).
    init?(_ algorithm: SecKeyAlgorithm) {
        let parts = (algorithm.rawValue as String).split(separator: ":").map(String.init)
        guard parts.count >= 3, parts[0] == "algid" else { return nil }
        let hash = parts.count > 3 ? DigestAlgorithm(rawValue: parts[3]) : nil
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
        case ("encrypt", "RSA"):
            if parts.count == 4 && parts[3] == "PKCS1" { self = .rsaEncryption(.pkcs1); return }
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
            _ = hash
            return nil
        }
    }

    /// Whether `key` can run this for `operation`: signing, decryption and key exchange need a
    /// private key; verification and encryption work with either half, as on Apple's platforms.
    func supports(_ operation: SecKeyOperationType, _ key: AsymmetricKey) -> Bool {
        let ec: Bool = { if case .ec = key.kind { return true }; return false }()
        switch (self, operation) {
        case (.ecdsa, .sign): return ec && key.isPrivate
        case (.ecdsa, .verify): return ec
        case (.rsaSignature, .sign): return !ec && key.isPrivate
        case (.rsaSignature, .verify): return !ec
        case (.rsaEncryption, .encrypt): return !ec
        case (.rsaEncryption, .decrypt): return !ec && key.isPrivate
        case (.ecies, .encrypt): return ec
        case (.ecies, .decrypt): return ec && key.isPrivate
        case (.ecdh, .keyExchange): return ec && key.isPrivate
        default: return false
        }
    }
}

/// The algorithm for `operation` on `key`, or the refusal Apple gives (errSecUnimplemented).
private func spec(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) throws -> KeyAlgorithmSpec {
    guard let s = KeyAlgorithmSpec(algorithm), s.supports(operation, key.key) else {
        throw KeyFailure.unsupported("\(algorithm.rawValue) is not supported by \(key) for this operation")
    }
    return s
}

/// The digest to sign: the input hashed for `message-` algorithms, else the input, whose length
/// must then be the named digest's (errSecParam).
private func digest(_ input: Data, hash: DigestAlgorithm?, message: Bool) throws -> [UInt8] {
    if message, let hash { return input.withUnsafeBytes { hash.hash($0) } }
    if let hash, input.count != hash.length { throw KeyFailure.param("a \(hash.rawValue) digest is \(hash.length) bytes") }
    return Array(input)
}

/// Whether `key` can run `algorithm` for `operation` (`SecKeyIsAlgorithmSupported`).
public func SecKeyIsAlgorithmSupported(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) -> Bool {
    KeyAlgorithmSpec(algorithm)?.supports(operation, key.key) ?? false
}

/// Signs `dataToSign` (`SecKeyCreateSignature`) with a private key: ECDSA signatures are DER
/// (X9.62), RSA signatures are as long as the modulus.
/// - Returns: nil with `error`: errSecUnimplemented for an algorithm the key cannot run,
///   errSecParam for a digest of the wrong length.
public func SecKeyCreateSignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData,
                                  _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    keyCall(error, "SecKeyCreateSignature") {
        let input = dataToSign as Data
        switch try spec(key, .sign, algorithm) {
        case .ecdsa(let hash, let message):
            return Data(try key.key.sign(digest: try digest(input, hash: hash, message: message), hash: hash, scheme: .ecdsaX962)) as NSData
        case .rsaSignature(let scheme, let hash, let message):
            return Data(try key.key.sign(digest: try digest(input, hash: hash, message: message), hash: hash, scheme: scheme)) as NSData
        default:
            throw KeyFailure.unsupported("\(algorithm.rawValue) does not sign")
        }
    }
}

/// Verifies `signature` over `signedData` (`SecKeyVerifySignature`).
/// - Returns: false with errSecVerifyFailed in `error` for a signature that does not verify.
public func SecKeyVerifySignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData,
                                  _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> Bool {
    keyCall(error, "SecKeyVerifySignature") { () -> Bool? in
        let input = signedData as Data
        let sig = Array(signature as Data)
        let ok: Bool
        switch try spec(key, .verify, algorithm) {
        case .ecdsa(let hash, let message):
            ok = try key.key.verify(signature: sig, digest: try digest(input, hash: hash, message: message), hash: hash, scheme: .ecdsaX962)
        case .rsaSignature(let scheme, let hash, let message):
            ok = try key.key.verify(signature: sig, digest: try digest(input, hash: hash, message: message), hash: hash, scheme: scheme)
        default:
            throw KeyFailure.unsupported("\(algorithm.rawValue) does not verify")
        }
        guard ok else { throw KeyError.verificationFailed }
        return true
    } ?? false
}

/// Encrypts `plaintext` (`SecKeyCreateEncryptedData`) with a public key (or a private key's
/// public half): RSA PKCS1 / OAEP, or Apple's ECIES.
/// - Returns: nil with errSecParam in `error` for a plaintext too long for RSA.
public func SecKeyCreateEncryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData,
                                      _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    keyCall(error, "SecKeyCreateEncryptedData") {
        let input = plaintext as Data
        switch try spec(key, .encrypt, algorithm) {
        case .rsaEncryption(let padding):
            return Data(try input.withUnsafeBytes { try key.key.encrypt($0, padding: padding) }) as NSData
        case .ecies(let hash, let variableIV):
            return Data(try input.withUnsafeBytes { try ECIES.encrypt($0, to: key.key, hash: hash, variableIV: variableIV) }) as NSData
        default:
            throw KeyFailure.unsupported("\(algorithm.rawValue) does not encrypt")
        }
    }
}

/// Decrypts `ciphertext` (`SecKeyCreateDecryptedData`) with a private key.
/// - Returns: nil with errSecParam in `error` when it does not decrypt.
public func SecKeyCreateDecryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData,
                                      _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    keyCall(error, "SecKeyCreateDecryptedData") {
        let input = ciphertext as Data
        let plain: SecureBytes
        switch try spec(key, .decrypt, algorithm) {
        case .rsaEncryption(let padding):
            plain = try input.withUnsafeBytes { try key.key.decrypt($0, padding: padding) }
        case .ecies(let hash, let variableIV):
            plain = try input.withUnsafeBytes { try ECIES.decrypt($0, with: key.key, hash: hash, variableIV: variableIV) }
        default:
            throw KeyFailure.unsupported("\(algorithm.rawValue) does not decrypt")
        }
        return plain.withUnsafeBytes { Data($0) } as NSData
    }
}

/// ECDH (`SecKeyCopyKeyExchangeResult`): the shared secret with `publicKey`, or with an X9.63
/// algorithm that many bytes (`kSecKeyKeyExchangeParameterRequestedSize`, required) derived
/// from it with `kSecKeyKeyExchangeParameterSharedInfo`.
public func SecKeyCopyKeyExchangeResult(_ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey,
                                        _ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    keyCall(error, "SecKeyCopyKeyExchangeResult") {
        guard case .ecdh(let kdf) = try spec(privateKey, .keyExchange, algorithm) else {
            throw KeyFailure.unsupported("\(algorithm.rawValue) is not a key exchange")
        }
        guard publicKey.key.kind == privateKey.key.kind else { throw KeyFailure.param("the keys are on different curves") }
        let z = try privateKey.key.sharedSecret(with: try publicKey.key.publicKey())
        guard let kdf else { return z.withUnsafeBytes { Data($0) } as NSData }
        let params = parameters as NSDictionary
        guard let size = KeyParameters.number(params["requestedSize"]), size > 0, size <= 1 << 16 else {
            throw KeyFailure.param("kSecKeyKeyExchangeParameterRequestedSize is required")
        }
        let info = (params["sharedInfo"] as? Data).map(Array.init) ?? []
        let out = try x963KDF(kdf, secret: z, sharedInfo: info, count: Int(size))
        return out.withUnsafeBytes { Data($0) } as NSData
    }
}
