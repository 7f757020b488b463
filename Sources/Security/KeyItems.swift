import KeychainModel
import KeychainCrypto
import KeychainKeys
import KeychainProtocol

/// `SecKey`s as `kSecClassKey` items: the key bytes are the item's secret (in guarded memory
/// on the way), its facts the item's attributes, as Apple's `SecKeyCopyAttributeDictionary`.
/// A key read back is built from the attributes (`pubk`, which the daemon sets) and the item's
/// persistent reference: a private key's bytes stay in the daemon.
enum KeyItems {
    /// The attributes Apple derives from a key: class, label, type, sizes and usage flags.
    static func keyAttributes(_ key: SecKey) -> Attributes {
        let priv = key.isPrivate
        var a: Attributes = [
            .keyClass: .number(priv ? 1 : 0), .applicationLabel: .data(key.applicationLabel), .keyType: .number(key.typeCode),
            .keySizeInBits: .number(Int64(key.key.sizeInBits)), .effectiveKeySize: .number(Int64(key.key.sizeInBits)),
            .isPermanent: .bool(true), .isPrivate: .bool(true), .isModifiable: .bool(true), .isSensitive: .bool(false),
            .alwaysSensitive: .bool(false), .isExtractable: .bool(true), .neverExtractable: .bool(false), .canDerive: .bool(true),
            .canSignRecover: .bool(false), .canVerifyRecover: .bool(false),
        ]
        for (flag, onPrivate) in [(AttributeKey.canEncrypt, false), (.canDecrypt, true), (.canSign, true), (.canVerify, false), (.canWrap, false), (.canUnwrap, true)] {
            a[flag] = .bool(onPrivate == priv)
        }
        return a
    }

    /// The key's external representation in guarded memory; a stored private key's is read
    /// from the keychain (errSecDataNotAvailable when it is not extractable).
    static func keyValue(_ key: SecKey) throws -> SecureBytes {
        if let ref = key.storedReference { return try StoredKeys.bytes(ref) }
        if key.key.isPrivate { return try key.key.privateBytes() }
        return try SecureBytes(copying: key.key.publicBytes())
    }

    /// Stores `key` (`SecItemAdd` with `kSecValueRef`): its attributes, then the caller's
    /// (which win), the key bytes as the secret.
    /// - Returns: the stored key as the keychain returns it (for a private key, one whose
    ///   bytes stay in the daemon).
    /// - Throws: the keychain's status (`KeychainStatus`).
    @discardableResult
    static func add(_ key: SecKey, parameters: NSDictionary) throws -> SecKey {
        var query = try addQuery(key, parameters: parameters)
        let secret = try keyValue(key)
        defer { secret.wipe() }
        query[.returnRef] = .bool(true)
        let response = try KeychainConnection.shared.send(Request(.add, query: query, secrets: [secret]))
        guard case .value(.item(let item)) = response.result else { throw KeychainStatus.decode }
        return try secKey(item)
    }

    /// The add query for `key` with the caller's dictionary (less `v_Ref` and `v_Data`).
    static func addQuery(_ key: SecKey, parameters: NSDictionary) throws -> Attributes {
        let rest = parameters.mutableCopy() as! NSMutableDictionary
        for k in [kSecValueRef, kSecValueData, kSecAttrIsPermanent] { rest.removeObject(forKey: k) }
        if let c = rest[kSecClass] {
            guard let name = (c as? String) ?? (c as? NSString).map({ $0 as String }), ItemClass(name: name) == .key else {
                throw KeychainStatus.param  // a key is only ever a kSecClassKey item
            }
        }
        let (given, _) = try Conversion.attributes(rest, extractData: false)
        var query = keyAttributes(key)
        for (k, v) in given { query[k] = v }
        query[.class] = .itemClass(.key)
        return query
    }

    static func objects(_ attributes: Attributes) -> [String: AnyObject] {
        var out: [String: AnyObject] = [:]
        for (k, v) in attributes { out[k.rawValue] = Conversion.object(v, key: k) }
        return out
    }

    /// The module's answer to a search or add: `SecKey`s for a key query with `r_Ref`.
    static func shape(_ result: QueryResult, query: Attributes) throws -> AnyObject? {
        if let asked = askedReference(query) { return try object(result, asked: asked) }
        return Conversion.object(result)
    }

    /// The `SecKey` of a key item returned with its attributes and persistent reference: a
    /// public key held here, or a private key the daemon holds for this process.
    /// - Throws: `decode` for an item without a public key (`pubk`) of its `type`.
    static func secKey(_ item: FoundItem) throws -> SecKey {
        guard let type = item.attributes[.keyType]?.numberValue, let keyClass = item.attributes[.keyClass]?.numberValue,
              case .data(let pub)? = item.attributes[ItemClass.publicKeyAttribute],
              let publicKey = try? pub.withUnsafeBytes({ try AsymmetricKey.apple(type: type, isPrivate: false, $0) })
        else { throw KeychainStatus.decode }
        guard keyClass == 1 else { return SecKey(publicKey, itemAttributes: item.attributes) }
        guard let ref = item.persistentRef else { throw KeychainStatus.decode }
        return SecKey(stored: ref, publicKey: publicKey, itemAttributes: item.attributes)
    }

    // MARK: kSecReturnRef

    /// What a key query's return keys asked for, when `r_Ref` is among them: the engine then
    /// returns attributes and the persistent reference, and the answer is shaped here.
    struct Asked {
        var data = false, attributes = false, persistentRef = false
        var onlyRef: Bool { !data && !attributes && !persistentRef }
    }

    /// The return keys of a key or certificate query that asks for `r_Ref`; nil for any other query.
    static func askedReference(_ attrs: Attributes) -> Asked? {
        guard flag(attrs[.returnRef]), isKeyQuery(attrs) || CertificateItems.isCertificateQuery(attrs) else { return nil }
        return Asked(data: flag(attrs[.returnData]), attributes: flag(attrs[.returnAttributes]),
                     persistentRef: flag(attrs[.returnPersistentRef]))
    }

    static func isKeyQuery(_ attrs: Attributes) -> Bool {
        if case .string(let name)? = attrs[.class] { return ItemClass(name: name) == .key }
        if case .data(let bytes)? = attrs[.valuePersistentRef] { return PersistentRef(bytes: bytes)?.itemClass == .key }
        return false
    }

    static func flag(_ v: AttributeValue?) -> Bool {
        switch v {
        case .bool(let b)?: return b
        case .number(let n)?: return n != 0
        default: return false
        }
    }

    /// The result of a key or certificate query with `r_Ref`: a bare `SecKey` or
    /// `SecCertificate`, or dictionaries holding it under `v_Ref` beside what the other return
    /// keys asked for.
    static func object(_ result: QueryResult, asked: Asked) throws -> AnyObject? {
        func one(_ value: ReturnedValue) throws -> AnyObject {
            guard let item = value.item else { throw KeychainStatus.decode }
            let isCertificate = item.persistentRef.flatMap(PersistentRef.init(bytes:))?.itemClass == .certificate
            let key: AnyObject = isCertificate ? try CertificateItems.certificate(item) : try secKey(item)
            if asked.onlyRef { return key }
            let shaped = FoundItem(attributes: asked.attributes ? item.attributes : [:], secret: asked.data ? item.secret : nil,
                                   persistentRef: asked.persistentRef ? item.persistentRef : nil)
            let dict = Conversion.object(.item(shaped)) as! NSMutableDictionary
            dict[kSecValueRef] = key
            return dict
        }
        switch result {
        case .none: return nil
        case .value(let v): return try one(v)
        case .array(let a): return NSArray(array: try a.map(one))
        }
    }
}
