import KeychainModel
import KeychainCrypto
import KeychainKeys
import KeychainProtocol

/// A certificate with its private key (`SecIdentityRef`). The keychain holds no identity items:
/// an identity is a certificate item joined with the private key item (`kcls` 1) whose
/// application label (`klbl`) equals the certificate's public key hash (`pkhh`), as Apple's
/// securityd joins them. Both items are searched with the caller's own access groups, so an
/// identity exists for a caller only when it may see both.
public final class SecIdentity: NSObject, Sendable {
    let certificate: SecCertificate
    let privateKey: SecKey

    init(certificate: SecCertificate, privateKey: SecKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SecIdentity else { return false }
        return other.certificate == certificate && other.privateKey == privateKey
    }

    public override var hash: Int { certificate.hash }
}

/// The identity's certificate (`SecIdentityCopyCertificate`).
@discardableResult
public func SecIdentityCopyCertificate(_ identity: SecIdentity, _ certificateRef: UnsafeMutablePointer<SecCertificate?>) -> OSStatus {
    certificateRef.pointee = identity.certificate
    return errSecSuccess
}

/// The identity's private key (`SecIdentityCopyPrivateKey`): a key the daemon holds, used
/// through it (signing, decryption), as any private key from the keychain.
@discardableResult
public func SecIdentityCopyPrivateKey(_ identity: SecIdentity, _ privateKeyRef: UnsafeMutablePointer<SecKey?>) -> OSStatus {
    privateKeyRef.pointee = identity.privateKey
    return errSecSuccess
}

/// The identity of `certificate` (`SecIdentityCreateWithCertificate`): the private key in the
/// keychain whose `klbl` is the certificate's public key hash. `keychainOrArray` is ignored
/// (one keychain per daemon).
/// - Returns: errSecItemNotFound when the caller can see no such key.
@discardableResult
public func SecIdentityCreateWithCertificate(_ keychainOrArray: CFTypeRef?, _ certificate: SecCertificate,
                                             _ identityRef: UnsafeMutablePointer<SecIdentity?>) -> OSStatus {
    do {
        guard let hash = certificate.certificate.publicKeyHash else { return KeychainStatus.itemNotFound.rawValue }
        guard let key = try Identities.privateKey(hash: hash, filters: [:]) else { return KeychainStatus.itemNotFound.rawValue }
        identityRef.pointee = SecIdentity(certificate: certificate, privateKey: key)
        return errSecSuccess
    } catch let s as KeychainStatus {
        return s.rawValue
    } catch {
        return KeychainStatus.param.rawValue
    }
}

/// `kSecClassIdentity` searches: the certificate items the query matches, in insertion order,
/// each joined with its private key; certificates without a visible key are left out.
enum Identities {
    static func isIdentityQuery(_ attrs: Attributes) -> Bool {
        if case .string(let name)? = attrs[.class] { return name == ValueName.identityClass || name == "kSecClassIdentity" }
        return false
    }

    /// The answer to an identity search: `SecIdentity`s for `r_Ref`, dictionaries of the
    /// certificate's attributes (with `v_Ref`, the certificate's data and persistent reference
    /// where asked) otherwise. The filters (other than `agrp` and `sync`, which apply to both
    /// items) are certificate attributes.
    /// - Throws: `itemNotFound` when no identity matches; the certificate search's status.
    static func search(_ attrs: Attributes) throws -> AnyObject? {
        var certQuery: Attributes = [:]
        var keyFilters: Attributes = [:]
        for (k, v) in attrs where !k.hasPrefix(.return) && !k.hasPrefix(.match) {
            certQuery[k] = v
            if k == .accessGroup || k == .synchronizable || k.hasPrefix(.use) { keyFilters[k] = v }
        }
        certQuery[.class] = .string(ItemClass.certificate.rawValue)
        certQuery[.returnAttributes] = true
        certQuery[.returnData] = true
        certQuery[.returnPersistentRef] = true
        certQuery[.matchLimit] = .matchLimitAll
        let wantsRef = KeyItems.flag(attrs[.returnRef])
        let asked = KeyItems.Asked(data: KeyItems.flag(attrs[.returnData]), attributes: KeyItems.flag(attrs[.returnAttributes]),
                                   persistentRef: KeyItems.flag(attrs[.returnPersistentRef]))
        let limit = try limitCount(attrs[.matchLimit])
        let response = try KeychainConnection.shared.send(Request(.copyMatching, query: certQuery))
        var found: [AnyObject] = []
        for value in response.result.values {
            guard let item = value.item, case .data(let pkhh)? = item.attributes[.publicKeyHash], !pkhh.isEmpty,
                  let certificate = try? CertificateItems.certificate(item),
                  let key = try privateKey(hash: pkhh, filters: keyFilters) else { continue }
            let identity = SecIdentity(certificate: certificate, privateKey: key)
            if wantsRef && asked.onlyRef {
                found.append(identity)
            } else {
                var shaped = FoundItem(attributes: asked.attributes ? item.attributes : [:], secret: asked.data ? item.secret : nil,
                                       persistentRef: asked.persistentRef ? item.persistentRef : nil)
                if asked.attributes { shaped.attributes[.class] = .string(ValueName.identityClass) }
                let dict = Conversion.object(.item(shaped)) as! NSMutableDictionary
                if wantsRef { dict[kSecValueRef] = identity }
                found.append(dict)
            }
            if found.count == limit { break }
        }
        guard !found.isEmpty else { throw KeychainStatus.itemNotFound }
        if attrs[.matchLimit] == .matchLimitAll { return NSArray(array: found) }
        if let limit, limit > 1 { return NSArray(array: found) }
        return found[0]
    }

    /// The private key whose application label is `hash`, as a `SecKey` the daemon holds;
    /// nil when the caller sees none.
    static func privateKey(hash: [UInt8], filters: Attributes) throws -> SecKey? {
        var query = filters
        query[.class] = .itemClass(.key)
        query[.keyClass] = 1
        query[.applicationLabel] = .data(hash)
        query[.returnAttributes] = true
        query[.returnPersistentRef] = true
        do {
            let response = try KeychainConnection.shared.send(Request(.copyMatching, query: query))
            guard let item = response.result.values.first?.item else { return nil }
            return try KeyItems.secKey(item)
        } catch KeychainStatus.itemNotFound {
            return nil
        }
    }

    /// How many identities to return: nil for all.
    private static func limitCount(_ v: AttributeValue?) throws -> Int? {
        switch v {
        case nil, .matchLimitOne?: return 1
        case .matchLimitAll?: return nil
        case .number(let n)? where n >= 1: return Int(n)
        default: throw KeychainStatus.param
        }
    }
}

private extension QueryResult {
    var values: [ReturnedValue] {
        switch self {
        case .none: return []
        case .value(let v): return [v]
        case .array(let a): return a
        }
    }
}
