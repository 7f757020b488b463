import KeychainCrypto

/// What the file interface needs of an item, without its secret.
public struct FileEntry: Sendable {
    public var ref: PersistentRef
    public var service: [UInt8]
    public var account: [UInt8]
    public var group: String
    public var protection: ProtectionClass
    /// The secret's length, from the sealed box's size: no decryption needed.
    public var size: Int
    public var attributes: Attributes
    public var version: Int64
}

extension Vault {
    /// Generic passwords visible to `accessGroups` whose class key is available, optionally of one
    /// service and one account, in insertion order. Locked items are left out: their files vanish.
    public func fileEntries(service: [UInt8]? = nil, account: [UInt8]? = nil, accessGroups: [String],
                            limit: Int = Int.max) throws -> [FileEntry] {
        var query: Attributes = ["class": "genp", "sync": "syna"]
        if let service { query["svce"] = .data(service) }
        if let account { query["acct"] = .data(account) }
        let q = try ParsedQuery(query, operation: .search)
        return try mutex.withLock {
            guard !accessGroups.isEmpty, let indexKey = keys.indexKey else { return [] }
            let groupTokens = accessGroups.map { IndexToken.group($0, key: indexKey) }
            let tokens = ItemClass.genericPassword.primaryKey.compactMap { name in  // account first
                q.filters[name].map { IndexToken.attribute(name, $0, itemClass: .genericPassword, key: indexKey) }
            }
            var out: [FileEntry] = []
            try store.candidates(itemClass: .genericPassword, groupTokens: groupTokens, synchronizable: nil,
                                 protection: nil, tokens: tokens, uuid: nil) { item in
                guard let classKey = try? availableKey(for: item.protection),
                      let m = try? open(item, classKey: classKey, needSecret: false),
                      Self.matches(m.attributes, filters: q.filters, itemClass: .genericPassword)
                else { return true }
                out.append(FileEntry(ref: PersistentRef(itemClass: .genericPassword, uuid: item.uuid),
                                     service: m.attributes["svce"]?.byteView ?? [],
                                     account: m.attributes["acct"]?.byteView ?? [],
                                     group: m.attributes["agrp"]?.stringValue ?? "",
                                     protection: item.protection, size: max(0, item.secret.count - AEAD.overhead),
                                     attributes: m.attributes, version: item.version))
                return out.count < limit
            }
            return out
        }
    }

    /// The secret of one item by reference, if the caller's groups include its group.
    /// - Throws: `itemNotFound`, `interactionNotAllowed` when locked, `decode` when damaged.
    public func readSecret(of ref: PersistentRef, accessGroups: [String], approved: Bool = false) throws -> SecureBytes {
        let r = try copyMatching(["v_PersistentRef": .data(ref.bytes), "sync": "syna", "r_Data": true],
                                 accessGroups: accessGroups, approved: approved ? [ref] : [])
        guard let data = r.value?.data else { throw KeychainStatus.decode }
        return data
    }
}
