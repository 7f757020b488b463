import KeychainModel
import KeychainCrypto
import KeychainKeys
import KeychainProtocol

/// Permanent private keys made by the daemon (`SecKeyCreateRandomKey` with `kSecAttrIsPermanent`
/// for the private key): the add carries the key's type, size and attributes and no bytes, the
/// daemon generates the key and stores it (`generate`), and this process receives the stored
/// key, whose private half it never held, as Apple's securityd keeps keys it makes.
enum GeneratedKeys {
    /// The add's option (docs/security-api.md), as the daemon's `KeyGeneration` reads it.
    enum KeyGeneration {
        static let option = OptionKey.generate
        static let privateKey: AttributeValue = "private"
    }

    /// The type code and size a generation asks for, checked here for the caller's message.
    /// - Throws: errSecParam for another type, an EC size other than 256, 384, 521, an RSA size
    ///   outside 1024-4096 or not in whole bytes.
    static func spec(type: Any?, size: Any?) throws -> (type: Int64, bits: Int64) {
        let bits = KeyParameters.number(size)
        switch KeyParameters.number(type) {
        case 73:
            guard let curve = Curve(rawValue: Int(clamping: bits ?? 256)) else { throw KeyFailure.param("EC keys are 256, 384 or 521 bits") }
            return (73, Int64(curve.rawValue))
        case 42:
            let b = bits ?? 2048
            guard AsymmetricKey.rsaSizes.contains(Int(clamping: b)), b % 8 == 0 else {
                throw KeyFailure.param("RSA keys are 1024 to 4096 bits in whole bytes")
            }
            return (42, b)
        default:
            throw KeyFailure.param("kSecAttrKeyType must be EC (kSecAttrKeyTypeECSECPrimeRandom) or RSA")
        }
    }

    /// Asks the daemon to make and store a private key with `parameters` (the merged private
    /// key dictionary), the attributes `KeyItems.keyAttributes` gives a private key and the
    /// caller's, which win. `klbl` is set by the daemon from the key it makes.
    /// - Returns: the stored private key (its bytes stay in the daemon); nil when the daemon is
    ///   older and stored the add without making a key (that item is deleted again), so the
    ///   caller makes the key itself as before.
    /// - Throws: the keychain's status (`KeychainStatus`).
    static func makeStored(type: Int64, bits: Int64, parameters: NSDictionary) throws -> SecKey? {
        let rest = parameters.mutableCopy() as! NSMutableDictionary
        for k in [kSecValueRef, kSecValueData, kSecAttrIsPermanent, kSecClass] { rest.removeObject(forKey: k) }
        let (given, _) = try Conversion.attributes(rest, extractData: false)
        var query: Attributes = [
            .class: .itemClass(.key), .keyClass: .number(1), .keyType: .number(type), .keySizeInBits: .number(bits), .effectiveKeySize: .number(bits),
            .isPermanent: .bool(true), .isPrivate: .bool(true), .isModifiable: .bool(true), .isSensitive: .bool(false),
            .alwaysSensitive: .bool(false), .isExtractable: .bool(true), .neverExtractable: .bool(false), .canDerive: .bool(true),
            .canSignRecover: .bool(false), .canVerifyRecover: .bool(false),
            // A private key's usage, as KeyItems.keyAttributes sets it.
            .canEncrypt: .bool(false), .canDecrypt: .bool(true), .canSign: .bool(true), .canVerify: .bool(false), .canWrap: .bool(false), .canUnwrap: .bool(true),
        ]
        for (k, v) in given where !k.hasPrefix(.return) { query[k] = v }
        query[.returnRef] = .bool(true)
        let response = try KeychainConnection.shared.send(Request(.add, query: query, options: [KeyGeneration.option: KeyGeneration.privateKey]))
        guard case .value(.item(let item)) = response.result else { throw KeychainStatus.decode }
        guard case .data(let pub)? = item.attributes[ItemClass.publicKeyAttribute], !pub.isEmpty else {
            // A daemon without `generate` ignored the option and stored an empty key item.
            if let ref = item.persistentRef {
                _ = try? KeychainConnection.shared.send(Request(.delete, query: [.valuePersistentRef: .data(ref), .synchronizable: .synchronizableAny]))
            }
            return nil
        }
        return try KeyItems.secKey(item)
    }

    /// Deletes a stored key again (a pair whose public half could not be stored).
    static func remove(_ key: SecKey) {
        guard let ref = key.storedReference else { return }
        _ = try? KeychainConnection.shared.send(Request(.delete, query: [.valuePersistentRef: .data(ref), .synchronizable: .synchronizableAny]))
    }
}
