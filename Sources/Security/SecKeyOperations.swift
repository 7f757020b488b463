import KeychainModel
import KeychainCrypto
import KeychainKeys

extension SecKeyOperationType {
    var use: AppleAlgorithm.Use {
        switch self {
        case .sign: return .sign
        case .verify: return .verify
        case .encrypt: return .encrypt
        case .decrypt: return .decrypt
        case .keyExchange: return .keyExchange
        }
    }
}

/// The algorithm for `operation` on `key`, or the refusal Apple gives (errSecUnimplemented).
private func spec(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) throws -> AppleAlgorithm {
    guard let s = AppleAlgorithm(rawName: algorithm.name),
          s.supports(operation.use, kind: key.key.kind, isPrivate: key.isPrivate) else {
        throw KeyFailure.unsupported("\(algorithm.name) is not supported by \(key) for this operation")
    }
    return s
}

/// Whether `key` can run `algorithm` for `operation` (`SecKeyIsAlgorithmSupported`).
public func SecKeyIsAlgorithmSupported(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) -> Bool {
    AppleAlgorithm(rawName: algorithm.name)?.supports(operation.use, kind: key.key.kind, isPrivate: key.isPrivate) ?? false
}

/// Signs `dataToSign` (`SecKeyCreateSignature`) with a private key: ECDSA signatures are DER
/// (X9.62), RSA signatures are as long as the modulus. A key from the keychain signs in the
/// daemon (`StoredKeys`).
/// - Returns: nil with `error`: errSecUnimplemented for an algorithm the key cannot run,
///   errSecParam for a digest of the wrong length (for `rsaSignatureRaw`, an input longer than
///   the modulus or not less than it); for a stored key also errSecItemNotFound (deleted, or
///   outside the caller's groups), errSecInteractionNotAllowed (locked).
public func SecKeyCreateSignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData,
                                  _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    keyCall(error, "SecKeyCreateSignature") {
        Data(try dataToSign.withBytes { try KeyOperations.sign(key, algorithm, $0) }) as NSData
    }
}

/// Verifies `signature` over `signedData` (`SecKeyVerifySignature`).
/// - Returns: false with errSecVerifyFailed in `error` for a signature that does not verify.
public func SecKeyVerifySignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData,
                                  _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> Bool {
    keyCall(error, "SecKeyVerifySignature") { () -> Bool? in
        try signedData.withBytes { data in try signature.withBytes { try KeyOperations.verify(key, algorithm, data, signature: $0) } }
        return true
    } ?? false
}

/// Encrypts `plaintext` (`SecKeyCreateEncryptedData`) with a public key (or a private key's
/// public half): RSA PKCS1 / OAEP / raw, or Apple's ECIES.
/// - Returns: nil with errSecParam in `error` for a plaintext too long for RSA (for raw RSA,
///   longer than the modulus or not less than it).
public func SecKeyCreateEncryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData,
                                      _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    keyCall(error, "SecKeyCreateEncryptedData") {
        Data(try plaintext.withBytes { try KeyOperations.encrypt(key, algorithm, $0) }) as NSData
    }
}

/// Decrypts `ciphertext` (`SecKeyCreateDecryptedData`) with a private key; a key from the
/// keychain decrypts in the daemon. `rsaEncryptionRaw` gives the whole modulus-long block.
/// - Returns: nil with errSecParam in `error` when it does not decrypt; for a stored key also
///   the keychain's status (errSecItemNotFound, errSecInteractionNotAllowed).
public func SecKeyCreateDecryptedData(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData,
                                      _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    keyCall(error, "SecKeyCreateDecryptedData") {
        try ciphertext.withBytes { try KeyOperations.decrypt(key, algorithm, $0) }.withUnsafeBytes { Data($0) } as NSData
    }
}

/// The four operations on bytes where they are, for the `SecKeyCreate…` calls above and the
/// legacy calls (`SecKeyEncrypt`, ...), which copy the result into the caller's buffer.
enum KeyOperations {
    static func sign(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        let s = try spec(key, .sign, algorithm)
        if let ref = key.storedReference {
            return try StoredKeys.use(ref, .sign, algorithm, input: input).withUnsafeBytes { Array($0) }
        }
        return try s.sign(input, with: key.key)
    }

    /// - Throws: `KeyError.verificationFailed` for a signature that does not verify.
    static func verify(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ input: UnsafeRawBufferPointer,
                       signature: UnsafeRawBufferPointer) throws {
        let sig = Array(signature)
        let ok: Bool
        switch try spec(key, .verify, algorithm) {
        case .ecdsa(let hash, let message):
            let digest = try AppleAlgorithm.digest(input, hash: hash, message: message)
            ok = try key.key.verify(signature: sig, digest: digest, hash: hash, scheme: .ecdsaX962)
        case .rsaSignature(let scheme, let hash, let message):
            let digest = try AppleAlgorithm.digest(input, hash: hash, message: message)
            ok = try key.key.verify(signature: sig, digest: digest, hash: hash, scheme: scheme)
        case .rsaSignatureRaw:
            // Apple's `SecKeyAlgorithmAdaptorCopyResult_Verify_RSASignatureRaw`: the recovered
            // number without its leading zeros must be the input, byte for byte.
            let recovered = try key.key.rawPublic(signature)
            ok = recovered.drop { $0 == 0 }.elementsEqual(input)
        case .ed25519:
            ok = try key.key.verify(signature: sig, message: input)
        default:
            throw KeyFailure.unsupported("\(algorithm.name) does not verify")
        }
        guard ok else { throw KeyError.verificationFailed }
    }

    static func encrypt(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: UnsafeRawBufferPointer) throws -> [UInt8] {
        switch try spec(key, .encrypt, algorithm) {
        case .rsaEncryption(let padding): return try key.key.encrypt(plaintext, padding: padding)
        case .rsaEncryptionRaw: return try key.key.rawPublic(plaintext)
        case .ecies(let hash, let variableIV): return try ECIES.encrypt(plaintext, to: key.key, hash: hash, variableIV: variableIV)
        default: throw KeyFailure.unsupported("\(algorithm.name) does not encrypt")
        }
    }

    /// The plaintext, in guarded memory.
    static func decrypt(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: UnsafeRawBufferPointer) throws -> SecureBytes {
        let s = try spec(key, .decrypt, algorithm)
        if let ref = key.storedReference { return try StoredKeys.use(ref, .decrypt, algorithm, input: ciphertext) }
        return try s.decrypt(ciphertext, with: key.key)
    }
}

/// ECDH (`SecKeyCopyKeyExchangeResult`): the shared secret with `publicKey`, or with an X9.63
/// algorithm that many bytes (`kSecKeyKeyExchangeParameterRequestedSize`, required) derived
/// from it with `kSecKeyKeyExchangeParameterSharedInfo`. A key from the keychain agrees in the
/// daemon.
public func SecKeyCopyKeyExchangeResult(_ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey,
                                        _ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    keyCall(error, "SecKeyCopyKeyExchangeResult") {
        let s = try spec(privateKey, .keyExchange, algorithm)
        guard publicKey.key.kind == privateKey.key.kind else { throw KeyFailure.param("the keys are on different curves") }
        let params = parameters as NSDictionary
        let size = KeyParameters.number(params["requestedSize"]).map { Int(clamping: $0) }
        if case .ecdh(let kdf) = s, kdf != nil, !(1...(1 << 16)).contains(size ?? 0) {
            throw KeyFailure.param("kSecKeyKeyExchangeParameterRequestedSize is required")
        }
        let info = (params["sharedInfo"] as? Data).map(Array.init) ?? []
        let out: SecureBytes
        if let ref = privateKey.storedReference {
            out = try StoredKeys.exchange(ref, algorithm, peer: publicKey.key.publicBytes(), requestedSize: size, sharedInfo: info)
        } else {
            out = try s.exchange(with: privateKey.key, peer: publicKey.key, requestedSize: size, sharedInfo: info)
        }
        return out.withUnsafeBytes { Data($0) } as NSData
    }
}
