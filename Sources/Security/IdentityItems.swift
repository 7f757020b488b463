import KeychainModel
import KeychainCrypto
import KeychainKeys
import KeychainProtocol

/// `SecItemAdd`, `SecItemUpdate` and `SecItemDelete` of identities. The keychain holds no
/// identity items: as Apple's `explode_identity` (Security, `SecItem.c`) does, an identity is
/// added as its certificate and then its private key, and deleted as its certificate and then
/// its key, unless another certificate still names that key; as `handleUpdateIdentity` does,
/// an update changes its certificate and then its key.
enum IdentityItems {
    /// `SecItemAdd` with `kSecValueRef` of an identity and the caller's other attributes.
    /// As `explode_identity`: a certificate already there is not an error when the key is new,
    /// nor a key already there when the certificate is new; both there is errSecDuplicateItem.
    /// - Returns: what the return keys ask for, as a search for the identity returns it.
    /// - Throws: the keychain's status (`KeychainStatus`).
    /// - Throws: errSecParam for a return key without a result pointer (`wantsResult` false), before any change.
    static func add(_ identity: SecIdentity, parameters: NSDictionary, wantsResult: Bool) throws -> AnyObject? {
        let rest = parameters.mutableCopy() as! NSMutableDictionary
        for k in [kSecClass, kSecValueRef] { rest.removeObject(forKey: k) }
        let (given, _) = try Conversion.attributes(rest, extractData: false)
        let returns = given.filter { $0.key.hasPrefix(.return) }
        for k in returns.keys { rest.removeObject(forKey: k.rawValue as NSString) }
        let asked = returns.values.contains { KeyItems.flag($0) }
        if asked && !wantsResult { throw KeychainStatus.param }
        let certificate = identity.certificate
        var certificateIsNew = true
        do {
            let query = try CertificateItems.addQuery(parameters: rest)
            _ = try KeychainConnection.shared.send(Request(.add, query: query, secrets: [CertificateItems.value(certificate)]))
        } catch KeychainStatus.duplicateItem {
            certificateIsNew = false
        }
        do {
            // A key the keychain already holds where it would go is a duplicate; its bytes
            // (perhaps not extractable) need not be read to find that out.
            var existing: Attributes = [.class: .itemClass(.key), .keyClass: 1, .applicationLabel: .data(identity.privateKey.applicationLabel)]
            if let group = given[.accessGroup] { existing[.accessGroup] = group }
            if let sync = given[.synchronizable] { existing[.synchronizable] = sync }
            if (try? KeychainConnection.shared.send(Request(.copyMatching, query: existing))) != nil { throw KeychainStatus.duplicateItem }
            try KeyItems.add(identity.privateKey, parameters: rest)
        } catch KeychainStatus.duplicateItem where certificateIsNew {
        }
        guard asked else { return nil }
        var search: Attributes = [.class: .string(ValueName.identityClass), .issuer: .data(certificate.certificate.normalizedIssuer ?? certificate.certificate.issuerDER),
                                  .serialNumber: .data(certificate.certificate.serialNumber)]
        for k in [AttributeKey.accessGroup, .synchronizable] { if let v = given[k] { search[k] = v } }
        for (k, v) in returns { search[k] = v }
        return try Identities.search(search)
    }

    /// `SecItemDelete` with `kSecValueRef` of an identity: its certificate (with the query's
    /// access group and `sync`), then its private key unless a certificate with the same public
    /// key hash is left, as `explode_identity` does.
    /// - Throws: errSecItemNotFound when neither was there to delete.
    static func delete(_ identity: SecIdentity, query: Attributes) throws {
        let certificate = identity.certificate.certificate
        var certQuery: Attributes = [.class: .itemClass(.certificate), .issuer: .data(certificate.normalizedIssuer ?? certificate.issuerDER), .serialNumber: .data(certificate.serialNumber),
                                     .certificateType: .number(certificate.certificateType)]
        for k in [AttributeKey.accessGroup, .synchronizable] { if let v = query[k] { certQuery[k] = v } }
        var deleted = false
        do {
            _ = try KeychainConnection.shared.send(Request(.delete, query: certQuery))
            deleted = true
        } catch KeychainStatus.itemNotFound {
        }
        let hash = identity.privateKey.applicationLabel
        if try !certificateRemains(hash) {
            var keyQuery: Attributes = [.class: .itemClass(.key), .keyClass: 1, .applicationLabel: .data(hash)]
            if let ref = identity.privateKey.storedReference { keyQuery = [.valuePersistentRef: .data(ref)] }
            for k in [AttributeKey.accessGroup, .synchronizable] { if let v = query[k] { keyQuery[k] = v } }
            do {
                _ = try KeychainConnection.shared.send(Request(.delete, query: keyQuery))
                deleted = true
            } catch KeychainStatus.itemNotFound {
            }
        }
        guard deleted else { throw KeychainStatus.itemNotFound }
    }

    /// `SecItemDelete` of `kSecClassIdentity` with attributes: every identity the query finds
    /// (as `SecItemCopyMatching` finds them), each as `delete(_:query:)` deletes one. Apple's
    /// `explode_identity` instead deletes the certificates matching the attributes and then the
    /// keys matching the same attributes; here only the keys of the identities found go, so a
    /// query that names a certificate's label does not miss a key labelled otherwise, and
    /// `[kSecClass: kSecClassIdentity]` alone does not delete keys that have no certificate.
    /// - Throws: errSecItemNotFound when no identity matches.
    static func deleteMatching(_ query: Attributes) throws {
        var search = query
        for k in query.keys where k.hasPrefix(.return) || k.hasPrefix(.match) { search[k] = nil }
        search[.returnRef] = true
        search[.matchLimit] = .matchLimitAll
        guard let found = try Identities.search(search) as? [SecIdentity] else { throw KeychainStatus.decode }
        for identity in found { try delete(identity, query: query) }
    }

    /// `SecItemUpdate` with `kSecValueRef` of an identity in the query, as Apple's
    /// `handleUpdateIdentity` (Security, `SecItem.m`): its certificate is changed, then its
    /// private key, each found as the one item it is (with the query's access group and `sync`);
    /// the first failure ends it, the certificate's change staying.
    /// - Throws: the keychain's status for either (errSecItemNotFound when one is not there).
    static func update(_ identity: SecIdentity, query: Attributes, changes: Attributes, secret: SecureBytes?) throws {
        let certificate = identity.certificate.certificate
        var certQuery: Attributes = [.class: .itemClass(.certificate), .issuer: .data(certificate.normalizedIssuer ?? certificate.issuerDER),
                                     .serialNumber: .data(certificate.serialNumber), .certificateType: .number(certificate.certificateType)]
        var keyQuery: Attributes = [.class: .itemClass(.key), .keyClass: 1, .applicationLabel: .data(identity.privateKey.applicationLabel)]
        if let ref = identity.privateKey.storedReference { keyQuery = [.valuePersistentRef: .data(ref)] }
        for k in [AttributeKey.accessGroup, .synchronizable] {
            if let v = query[k] { certQuery[k] = v; keyQuery[k] = v }
        }
        for q in [certQuery, keyQuery] {
            _ = try KeychainConnection.shared.send(Request(.update, query: q, changes: changes, secrets: secret.map { [$0] } ?? []))
        }
    }

    /// `SecItemUpdate` of `kSecClassIdentity` with attributes, as `handleUpdateIdentity`: the
    /// same query and changes for `kSecClassCertificate`, then for `kSecClassKey`; the first
    /// failure ends it (a query no key matches is errSecItemNotFound after the certificates
    /// changed), as on Apple's platforms.
    static func updateMatching(_ query: Attributes, changes: Attributes, secret: SecureBytes?) throws {
        for itemClass in [ItemClass.certificate, .key] {
            var q = query
            q[.class] = .itemClass(itemClass)
            _ = try KeychainConnection.shared.send(Request(.update, query: q, changes: changes, secrets: secret.map { [$0] } ?? []))
        }
    }

    /// Whether a certificate whose public key hash is `hash` is still in the keychain.
    private static func certificateRemains(_ hash: [UInt8]) throws -> Bool {
        do {
            _ = try KeychainConnection.shared.send(Request(.copyMatching, query: [.class: .itemClass(.certificate), .publicKeyHash: .data(hash), .synchronizable: .synchronizableAny]))
            return true
        } catch KeychainStatus.itemNotFound {
            return false
        }
    }
}
