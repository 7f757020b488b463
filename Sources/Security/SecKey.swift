import KeychainModel
import KeychainCrypto
import KeychainKeys

/// A public or private EC, RSA or Ed25519 key (`SecKeyRef`). Keys compare equal when they are
/// the same kind of key with the same public key. A key made or imported here is held in this
/// process (libcrypto's secure heap). A private key from the keychain is not: it holds its item's
/// persistent reference and public half, and the daemon signs, decrypts and agrees with it
/// (`StoredKeys`), as Apple's securityd does.
public final class SecKey: NSObject, Sendable {
    /// The key itself; for a stored private key, its public half.
    let key: AsymmetricKey
    /// The persistent reference of the keychain item whose private key this is, when the
    /// private key stays in the daemon.
    let storedReference: [UInt8]?
    /// The keychain item's attributes (`atag`, `labl`, `agrp`, ...) when the key came from the
    /// keychain or was stored there; `SecKeyCopyAttributes` includes them.
    let itemAttributes: Attributes

    init(_ key: AsymmetricKey, itemAttributes: Attributes = [:]) {
        self.key = key
        self.storedReference = nil
        self.itemAttributes = itemAttributes
    }

    /// A private key kept by the daemon: `publicKey` its public half, `reference` its item.
    init(stored reference: [UInt8], publicKey: AsymmetricKey, itemAttributes: Attributes) {
        self.key = publicKey
        self.storedReference = reference
        self.itemAttributes = itemAttributes
    }

    var isPrivate: Bool { storedReference != nil || key.isPrivate }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SecKey else { return false }
        return other.key.kind == key.kind && other.isPrivate == isPrivate && other.key.publicBytes() == key.publicBytes()
    }

    public override var hash: Int { key.publicBytes().hashValue }

    public override var description: String {
        let kind: String
        switch key.kind {
        case .ec: kind = isPrivate ? "ECPrivateKey" : "ECPublicKey"
        case .rsa: kind = isPrivate ? "RSAPrivateKey" : "RSAPublicKey"
        case .ed25519: kind = isPrivate ? "Ed25519PrivateKey" : "Ed25519PublicKey"
        }
        return "<SecKeyRef key type: \(kind), block size: \(key.sizeInBits) bits>"
    }

    /// Apple's `kSecAttrKeyType` raw value: "73" for EC, "42" for RSA; keychainfs's code for Ed25519.
    var typeCode: Int64 { key.appleTypeCode }

    /// Apple's application label (`klbl`): SHA-1 of the public key's external representation.
    var applicationLabel: [UInt8] { DigestAlgorithm.sha1.hash(key.publicBytes()) }
}

/// Runs `body`; a thrown error becomes Apple's status and a reason in `error` (`SecurityError`)
/// and the result is nil.
func keyCall<R>(_ out: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ what: String, _ body: () throws -> R?) -> R? {
    do {
        return try body()
    } catch {
        let (status, reason) = statusAndReason(of: error, what)
        setError(out, status, reason)
    }
    return nil
}

// MARK: Creating keys

/// Generates a key pair (`SecKeyCreateRandomKey`) and returns the private key.
/// `kSecAttrKeyType` EC (`kSecAttrKeyTypeECSECPrimeRandom`) with `kSecAttrKeySizeInBits` 256
/// (the default), 384 or 521, or RSA with 1024 to 4096 bits (default 2048). With
/// `kSecAttrIsPermanent` true at the top level or in `kSecPrivateKeyAttrs` / `kSecPublicKeyAttrs`
/// the key is stored in the keychain as a `kSecClassKey` item, with the other attributes of that
/// dictionary (`kSecAttrApplicationTag`, `kSecAttrLabel`, `kSecAttrAccessible`, ...). A
/// permanent private key is made by the daemon (`GeneratedKeys`) and returned as the keychain's.
/// - Returns: nil with `error` set: errSecParam for an unknown type or size,
///   the keychain's status when storing fails (errSecDuplicateItem, ...). With
///   `kSecAttrTokenID` `kSecAttrTokenIDSecureEnclave` the P-256 key is made in the daemon's TPM
///   (`TokenKeys`): errSecNotAvailable when it has none.
public func SecKeyCreateRandomKey(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    keyCall(error, "SecKeyCreateRandomKey") {
        let params = parameters as NSDictionary
        if params[kSecAttrTokenID] != nil { return try TokenKeys.create(params) }  // made in the daemon's TPM
        let privateParams = KeyParameters.merged(params, "private")
        let publicParams = KeyParameters.merged(params, "public")
        if KeyParameters.flag(privateParams[kSecAttrIsPermanent]) {
            // Made and stored by the daemon: the private key never exists in this process.
            let spec = try GeneratedKeys.spec(type: params[kSecAttrKeyType], size: params[kSecAttrKeySizeInBits])
            if let stored = try GeneratedKeys.makeStored(type: spec.type, bits: spec.bits, parameters: privateParams) {
                if KeyParameters.flag(publicParams[kSecAttrIsPermanent]) {
                    do { try KeyItems.add(SecKey(stored.key), parameters: publicParams) } catch {
                        GeneratedKeys.remove(stored)  // a pair is stored whole or not at all
                        throw error
                    }
                }
                return stored
            }
        }
        let key = try KeyParameters.generate(type: params[kSecAttrKeyType], size: params[kSecAttrKeySizeInBits])
        if KeyParameters.flag(publicParams[kSecAttrIsPermanent]) {
            try KeyItems.add(SecKey(try key.publicKey()), parameters: publicParams)
        }
        // An older daemon makes no keys: the key made here is stored, and then used there.
        if KeyParameters.flag(privateParams[kSecAttrIsPermanent]) { return try KeyItems.add(SecKey(key), parameters: privateParams) }
        return SecKey(key)
    }
}

/// The public key of a key pair (`SecKeyCopyPublicKey`); a public key returns itself. A key
/// from the keychain has its public half here (the item's `pubk`), so this asks nobody.
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? {
    guard key.isPrivate else { return key }
    if key.storedReference != nil { return SecKey(key.key) }
    return (try? key.key.publicKey()).map { SecKey($0) }
}

/// A key from its external representation (`SecKeyCreateWithData`): for EC `04 || X || Y`
/// (public) or `04 || X || Y || K` (private), for RSA the PKCS#1 DER. `attributes` must give
/// `kSecAttrKeyType` and `kSecAttrKeyClass`. `kSecAttrKeySizeInBits` is not read: the size is
/// the key's, as in Apple's `SecKeyCreateWithData` (SecKey.m), which never looks at it; callers
/// pass the DER length x 8 for RSA and it works on Apple's platforms.
/// - Returns: nil with errSecParam in `error` for missing attributes or bytes that are not
///   such a key (a point off the curve, a scalar that does not match its point, bad DER), with
///   Apple's reasons ("RSA public key creation from data failed", ...).
public func SecKeyCreateWithData(_ keyData: CFData, _ attributes: CFDictionary,
                                 _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    keyCall(error, "SecKeyCreateWithData") {
        let attrs = attributes as NSDictionary
        guard let type = KeyParameters.number(attrs[kSecAttrKeyType]) else { throw KeyFailure.param("kSecAttrKeyType is required") }
        guard let keyClass = KeyParameters.number(attrs[kSecAttrKeyClass]), keyClass == 0 || keyClass == 1 else {
            throw KeyFailure.param("kSecAttrKeyClass must be public or private")
        }
        do {
            return SecKey(try keyData.withBytes { try KeyParameters.importKey(type: type, isPrivate: keyClass == 1, $0) })
        } catch KeyError.invalidKeyData {
            let kind = type == 42 ? "RSA" : "EC"
            throw KeyFailure.apple(errSecParam, "\(kind) \(keyClass == 1 ? "private" : "public") key creation from data failed")
        }
    }
}

/// The key's external representation (`SecKeyCopyExternalRepresentation`), in the formats
/// `SecKeyCreateWithData` reads. A private key from the keychain is read from the daemon (an
/// audited read of its item).
/// - Returns: nil with errSecDataNotAvailable in `error` for a stored private key made with
///   `kSecAttrIsExtractable` false, as macOS refuses to export it (`impExpExportKeyCommon`);
///   the keychain's status (errSecItemNotFound, errSecInteractionNotAllowed) otherwise.
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    keyCall(error, "SecKeyCopyExternalRepresentation") {
        guard key.isPrivate else { return Data(key.key.publicBytes()) as NSData }
        return try KeyItems.keyValue(key).withUnsafeBytes { Data($0) } as NSData
    }
}

/// The key's attributes (`SecKeyCopyAttributes`), as Apple's `SecKeyCopyAttributeDictionary`
/// makes them: `class`, `kcls` ("0"/"1"), `klbl`, `type` ("73"/"42"), `bsiz`, `esiz`, the usage
/// flags and `v_Data` (the external representation), then the keychain item's attributes.
/// A private key from the keychain has no `v_Data` here: its bytes stay in the daemon.
public func SecKeyCopyAttributes(_ key: SecKey) -> CFDictionary? {
    let dict = NSMutableDictionary()
    if key.storedReference == nil {
        guard let value = try? KeyItems.keyValue(key) else { return nil }
        dict[kSecValueData] = value.withUnsafeBytes { Data($0) } as NSData
    }
    for (k, v) in KeyItems.keyAttributes(key) { dict[k.rawValue as NSString] = Conversion.object(v, key: k) }
    dict[kSecAttrKeyClass] = key.isPrivate ? kSecAttrKeyClassPrivate : kSecAttrKeyClassPublic
    dict[kSecAttrKeyType] = String(key.typeCode) as NSString
    dict[kSecClass] = kSecClassKey
    let own = Set([kSecValueData, kSecAttrKeyClass, kSecAttrKeyType, kSecClass].map { $0 as String } + [ItemClass.publicKeyAttribute.rawValue])
    for (k, v) in KeyItems.objects(key.itemAttributes) where !own.contains(k) { dict[k as NSString] = v }
    return dict
}

/// The block size in bytes (`SecKeyGetBlockSize`): the modulus length for RSA, the field size for EC.
public func SecKeyGetBlockSize(_ key: SecKey) -> Int { (key.key.sizeInBits + 7) / 8 }
