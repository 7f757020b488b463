import KeychainCrypto

/// Apple's ECIES (`SecKeyAlgorithm.eciesEncryption{Standard,Cofactor}[VariableIV]X963SHA*AESGCM`),
/// as Apple's SecKey.h documents it:
/// - an ephemeral key pair on the recipient's curve; Z = ECDH(ephemeral private, recipient public)
///   (the cofactor variant is the same on these curves, whose cofactor is 1);
/// - the X9.63 KDF with the named digest over Z, with the ephemeral public key (`04 || X || Y`)
///   as sharedInfo;
/// - AES-GCM with a 16-byte tag; the AES key is 16 bytes for curves of up to 256 bits and 32
///   bytes above; the IV is 16 zero bytes, or, for the VariableIV variants, the 16 KDF bytes
///   after the key;
/// - output `ephemeral public key || ciphertext || tag`.
public enum ECIES {
    /// Encrypts `plaintext` to `recipient` (a public EC key, or a private one's public half).
    /// - Throws: `unsupported` for an RSA key.
    public static func encrypt(_ plaintext: UnsafeRawBufferPointer, to recipient: AsymmetricKey,
                               hash: DigestAlgorithm, variableIV: Bool) throws -> [UInt8] {
        guard case .ec(let curve) = recipient.kind else { throw KeyError.unsupported }
        let ephemeral = try AsymmetricKey.generate(curve)
        let ephemeralPublic = ephemeral.publicBytes()
        let z = try ephemeral.sharedSecret(with: try recipient.publicKey())
        let material = try derive(z, ephemeralPublic: ephemeralPublic, curve: curve, hash: hash, variableIV: variableIV)
        let sealed = try withKeyAndIV(material, curve: curve, variableIV: variableIV) { key, iv in
            try AESGCM.seal(key: key, iv: iv, plaintext)
        }
        return ephemeralPublic + sealed
    }

    /// Decrypts what `encrypt` made for `privateKey`'s public half.
    /// - Throws: `unsupported` unless `privateKey` is a private EC key; `decryptionFailed` for a
    ///   ciphertext too short, an ephemeral key not on the curve, or a tag that does not check.
    public static func decrypt(_ ciphertext: UnsafeRawBufferPointer, with privateKey: AsymmetricKey,
                               hash: DigestAlgorithm, variableIV: Bool) throws -> SecureBytes {
        guard case .ec(let curve) = privateKey.kind, privateKey.isPrivate else { throw KeyError.unsupported }
        guard ciphertext.count >= curve.publicLength + AESGCM.tagLength else { throw KeyError.decryptionFailed }
        let ephemeralBytes = UnsafeRawBufferPointer(rebasing: ciphertext[0..<curve.publicLength])
        let ephemeral: AsymmetricKey
        do { ephemeral = try AsymmetricKey.ec(ephemeralBytes, isPrivate: false) } catch { throw KeyError.decryptionFailed }
        let z = try privateKey.sharedSecret(with: ephemeral)
        let material = try derive(z, ephemeralPublic: Array(ephemeralBytes), curve: curve, hash: hash, variableIV: variableIV)
        return try withKeyAndIV(material, curve: curve, variableIV: variableIV) { key, iv in
            try AESGCM.open(key: key, iv: iv, UnsafeRawBufferPointer(rebasing: ciphertext[curve.publicLength...]))
        }
    }

    static func aesKeyLength(_ curve: Curve) -> Int { curve.rawValue <= 256 ? 16 : 32 }

    private static func derive(_ z: SecureBytes, ephemeralPublic: [UInt8], curve: Curve, hash: DigestAlgorithm,
                               variableIV: Bool) throws -> SecureBytes {
        try x963KDF(hash, secret: z, sharedInfo: ephemeralPublic, count: aesKeyLength(curve) + (variableIV ? 16 : 0))
    }

    private static func withKeyAndIV<R>(_ material: SecureBytes, curve: Curve, variableIV: Bool,
                                        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> R) throws -> R {
        let keyLength = aesKeyLength(curve)
        let zeroIV = [UInt8](repeating: 0, count: 16)
        return try material.withUnsafeBytes { raw in
            let key = UnsafeRawBufferPointer(rebasing: raw[0..<keyLength])
            if variableIV { return try body(key, UnsafeRawBufferPointer(rebasing: raw[keyLength...])) }
            return try zeroIV.withUnsafeBytes { try body(key, $0) }
        }
    }
}
