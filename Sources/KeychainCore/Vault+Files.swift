import KeychainCrypto

/// What the file interface needs of an item, without its secret.
public struct FileEntry: Sendable {
    public var ref: PersistentRef
    /// `svce` of a generic password, `srvr` of an internet password.
    public var service: [UInt8]
    public var account: [UInt8]
    public var group: String
    public var protection: ProtectionClass
    /// The secret's length, from the sealed box's size: no decryption needed.
    public var size: Int
    public var attributes: Attributes
    public var version: Int64
    /// The sealed row the entry was opened from (small secrets only), so that reading the
    /// secret later needs no second search; its attributes were checked when it was opened.
    /// A name's search keeps only what opens the secret (`ItemRow.storedForSecret`).
    var row: StoredItem?
    /// True when a listing (`keepRows: false`) left out a row it would otherwise have kept: a
    /// search for this one file gives an entry that opens without one.
    public var rowLeftOut = false

    public var itemClass: ItemClass { ref.itemClass }

    /// About how many bytes of memory the entry holds (its arrays, strings, attributes and
    /// kept row), for caches bounded in bytes.
    public var footprint: Int {
        // A heap array or string costs its bytes plus about 32 of header; a dictionary slot about 64.
        func bytes(_ v: AttributeValue) -> Int {
            switch v {
            case .string(let s): return s.utf8.count > 15 ? s.utf8.count + 32 : 0
            case .data(let d): return d.count + 32
            default: return 0
            }
        }
        var total = 160 + service.count + account.count + 64 + group.utf8.count
        total += attributes.reduce(0) { $0 + 64 + bytes($1.value) }
        if let row {
            total += 160 + row.groupToken.count + row.primaryKeyToken.count + row.wrappedKey.count + row.attributes.count + row.secret.count
        }
        return total
    }

    /// The name the file interface gives the item (from its primary-key attributes).
    public var name: ItemName { ItemName(itemClass: ref.itemClass, attributes: attributes) }
}

extension Vault {
    /// Items of `itemClass` (generic or internet passwords) visible to `accessGroups` whose class
    /// key is available, optionally of one service (server) and one account, in insertion order.
    /// Locked items are left out: their files vanish.
    public func fileEntries(itemClass: ItemClass = .genericPassword, service: [UInt8]? = nil, account: [UInt8]? = nil,
                            accessGroups: [String], limit: Int = Int.max) throws -> [FileEntry] {
        var out: [FileEntry] = []
        try forEachFileEntry(itemClass: itemClass, service: service, account: account, accessGroups: accessGroups) { e in
            out.append(e)
            return out.count < limit
        }
        return out
    }

    /// The items named `name` (one path: an internet password's plain name finds only the item
    /// whose qualifiers are all empty; a name with its group only that group's), in insertion
    /// order; the first is the one its file shows.
    /// - Parameter attributes: the attributes the entries keep (`fileSelection`); nil keeps all.
    public func fileEntries(named name: ItemName, accessGroups: [String], limit: Int = Int.max,
                            attributes: AttributeSelection? = nil) throws -> [FileEntry] {
        let flat = FileNames.isFlat(name.itemClass)
        // A label has no lookup token: a key's or certificate's name is found among its class's.
        let q = flat ? try Self.fileQuery(itemClass: name.itemClass, service: nil, account: nil) : try Self.fileQuery(name)
        var out: [FileEntry] = []
        try withReader { reader in
            try forEachOpenedFileItem(q, accessGroups: name.narrowing(accessGroups), in: reader, trimming: attributes) { row, m in
                let attributes = m.attributes
                guard name.admits(attributes) else { return true }
                // The row only opens the secret later: its tokens and sealed attributes stay out.
                let e = fileEntry(row.storedForSecret(), attributes, keepRow: true)
                if !flat || e.name == name || name.namesFlat(labelled: attributes) { out.append(e) }
                return out.count < limit
            }
        }
        return out
    }

    /// `fileEntries` one at a time, for listings that must not hold a whole service in memory;
    /// `visit` returns false to stop. With `keepRows: false` no entry keeps its sealed row.
    /// `visit` runs while the listing reads the store, so it must not call back into the vault,
    /// and a lock waits for the listing to end. Past `ItemStore.longScanRows` rows the
    /// connection's page cache is bounded for the rest of the listing (`boundCacheForScan`).
    public func forEachFileEntry(itemClass: ItemClass = .genericPassword, service: [UInt8]? = nil, account: [UInt8]? = nil,
                                 accessGroups: [String], keepRows: Bool = true, visit: (FileEntry) throws -> Bool) throws {
        let q = try Self.fileQuery(itemClass: itemClass, service: service, account: account)
        try withReader { reader in
            var rows = 0
            var bounded: Int64?
            defer { if let bounded { reader.store.restoreCache(bounded) } }
            try forEachFileItem(q, accessGroups: accessGroups, in: reader) { item, attributes in
                rows += 1
                if rows == ItemStore.longScanRows { bounded = reader.store.boundCacheForScan() }
                return try visit(fileEntry(item, attributes, keepRow: keepRows))
            }
        }
    }

    /// Every generic password, of either `sync`: what a name's search adds its filters to.
    /// (Unsafe: ParsedQuery is not Sendable, but this one is never changed, only copied.)
    nonisolated(unsafe) private static let anyGenericPassword = try? ParsedQuery([.class: .string(ItemClass.genericPassword.rawValue),
                                                             .synchronizable: .synchronizableAny], operation: .search)

    /// The search for one service or server (and account) of generic or internet passwords.
    static func fileQuery(itemClass: ItemClass = .genericPassword, service: [UInt8]?, account: [UInt8]?) throws -> ParsedQuery {
        // A generic password's service and account are bytes that parsing keeps as they are:
        // set on the query parsed once, as for a name (`fileQuery(_:)`).
        if itemClass == .genericPassword, var q = anyGenericPassword {
            if let service { q.filters[.service] = .data(service) }
            if let account { q.filters[.account] = .data(account) }
            return q
        }
        var query: Attributes = [.class: .string(itemClass.rawValue), .synchronizable: .synchronizableAny]
        if FileNames.isFlat(itemClass) {
            if itemClass == .key { query[.keyClass] = 1 }  // private keys only
            return try ParsedQuery(query, operation: .search)
        }
        if let service { query[itemClass == .internetPassword ? .server : .service] = .data(service) }
        if let account { query[.account] = .data(account) }
        return try ParsedQuery(query, operation: .search)
    }

    /// The search for the items of one file name.
    static func fileQuery(_ name: ItemName) throws -> ParsedQuery {
        // A generic password's name is its service and account, bytes that parsing keeps as
        // they are: set on a query parsed once, as the mount searches once per new name.
        if name.itemClass == .genericPassword, var q = anyGenericPassword {
            q.filters[.service] = .data(name.service)
            q.filters[.account] = .data(name.account)
            return q
        }
        var query = name.attributes
        query[.synchronizable] = name.synchronizableFilter
        return try ParsedQuery(query, operation: .search)
    }

    /// The items `q` finds in `accessGroups` whose class key is available, with their opened
    /// attributes, in insertion order; `visit` returns false to stop. Call with the mutex held.
    func forEachFileItem(_ q: ParsedQuery, accessGroups: [String],
                         visit: (StoredItem, Attributes) throws -> Bool) throws {
        try forEachFileItem(q, accessGroups: accessGroups, in: writeContext, visit: visit)
    }

    /// The same on `context` (a reader's, or the write connection's with the mutex held).
    func forEachFileItem(_ q: ParsedQuery, accessGroups: [String], in context: SearchContext,
                         visit: (StoredItem, Attributes) throws -> Bool) throws {
        try forEachOpenedFileItem(q, accessGroups: accessGroups, in: context, keeping: nil) { row, m in
            try visit(row.stored(), m.attributes)
        }
    }

    /// Whether directory `service` of `itemClass` holds a file for `accessGroups`: the group and
    /// protection class of its first item that does (the same search, checks and order as
    /// `fileEntries(itemClass:service:accessGroups:limit:)` with a limit of 1), or nil. Opens
    /// only the attributes the checks read, and keeps nothing of the row.
    public func firstFileItem(itemClass: ItemClass, service: [UInt8], accessGroups: [String]) throws
        -> (group: String, protection: ProtectionClass)? {
        let q = try Self.fileQuery(itemClass: itemClass, service: service, account: nil)
        let keeping = q.filters.keys.allSatisfy({ Self.directorySelection.position(of: $0) != nil })
            ? Self.directorySelection : AttributeSelection(Array(q.filters.keys) + Self.fileCheckedAttributes)
        var found: (group: String, protection: ProtectionClass)?
        try withReader { reader in
            try forEachOpenedFileItem(q, accessGroups: accessGroups, in: reader, keeping: keeping) { row, m in
                guard case .string(let group)? = m.value(.accessGroup) else { return true }
                found = (group, row.header.protection)
                return false
            }
        }
        return found
    }

    /// What `firstFileItem` opens of an item: the filters of a directory's query (its service
    /// or server, the synchronizable value) and the checks. A query filtering on anything else
    /// gets a selection of its own.
    private static let directorySelection = AttributeSelection([.service, .server] + fileCheckedAttributes)

    /// What every file search reads of an item besides its filters: the clear columns' checks
    /// (`open`) and `showsAsFile`.
    private static let fileCheckedAttributes: [AttributeKey] = [.accessible, .synchronizable, .accessGroup,
                                                                .keyClass, .isExtractable, .isSensitive]

    /// A selection of `keys` for `fileEntries(named:accessGroups:limit:attributes:)`, with what
    /// its search itself reads added: the checks, every class's primary key (a name's filters
    /// and `FileEntry.name`), the label and the qualifiers of a key's or certificate's name.
    public static func fileSelection(_ keys: [AttributeKey]) -> AttributeSelection {
        AttributeSelection(keys + fileSearchAttributes)
    }

    /// The attributes `fileSelection` adds.
    public static let fileSearchAttributes: [AttributeKey] = fileCheckedAttributes + [.label]
        + ItemClass.allCases.flatMap { $0.primaryKey + (FileNames.isFlat($0) ? [FileNames.flatQualifier($0)] : []) }

    /// The rows `q` finds in `accessGroups` whose class key is available, opened (all their
    /// attributes, or only `keeping`'s), checked and matched, in insertion order; `visit`
    /// returns false to stop.
    private func forEachOpenedFileItem(_ q: ParsedQuery, accessGroups: [String], in context: SearchContext,
                                       keeping: AttributeSelection? = nil, trimming: AttributeSelection? = nil,
                                       visit: (ItemRow, Match) throws -> Bool) throws {
        guard !accessGroups.isEmpty, let indexKey = keys.indexKey else { return }
        let groupTokens = accessGroups.map { context.groupToken($0, indexKey: indexKey) }
        // Tokens only for the account and the directory's attribute (account first): a missing
        // qualifier may be stored as empty data or an empty string, which `matches` equates.
        let tokens = [AttributeKey.account, .service, .server].compactMap { name in
            q.filters[name].map { value in
                name == .account ? IndexToken.attribute(name, value, itemClass: q.itemClass, key: indexKey)
                                 : context.directoryToken(name, value, itemClass: q.itemClass, indexKey: indexKey)
            }
        }
        try context.store.candidates(itemClass: q.itemClass, groupTokens: groupTokens, synchronizable: nil,
                                     protection: nil, tokens: tokens, uuid: nil) { row in
            guard let classKey = try? availableKey(for: row.header.protection),
                  let m = try nilUnlessOutOfMemory({
                      try row.withSealedParts { try open($0, classKey: classKey, needSecret: false, in: context, keeping: keeping, trimming: trimming) }
                  }),
                  Self.matches(filters: q.filters, itemClass: q.itemClass, m.value),
                  Self.showsAsFile(itemClass: q.itemClass, m.value)
            else { return true }
            return try visit(row, m)
        }
    }

    /// Whether an item has a file: every password and certificate; of keys, the private keys
    /// that may be exported in the clear (`extr` not false, `sens` not true). Another key has
    /// no file at all, as `SecKeyCopyExternalRepresentation` of it fails: it can be used through
    /// the daemon, not read.
    static func showsAsFile(itemClass: ItemClass, _ value: (AttributeKey) -> AttributeValue?) -> Bool {
        guard itemClass == .key else { return true }
        return value(.keyClass)?.integerView == 1 && value(.isExtractable)?.integerView != 0
            && value(.isSensitive)?.integerView != 1
    }

    /// The entry of an opened row; `keepRow` keeps small rows so the secret opens without a search.
    func fileEntry(_ item: StoredItem, _ attributes: Attributes, keepRow: Bool) -> FileEntry {
        FileEntry(ref: PersistentRef(itemClass: item.itemClass, uuid: item.uuid),
                  service: attributes[item.itemClass == .internetPassword ? .server : .service]?.byteView ?? [], account: attributes[.account]?.byteView ?? [],
                  group: attributes[.accessGroup]?.stringValue ?? "", protection: item.protection,
                  size: max(0, item.secret.count - AEAD.overhead), attributes: attributes, version: item.version,
                  row: keepRow && item.secret.count <= Self.rowKeptBelow ? item : nil,
                  rowLeftOut: !keepRow && item.secret.count <= Self.rowKeptBelow)
    }

    /// Sealed secrets up to this size stay with their entries (ciphertext: nothing to wipe).
    static let rowKeptBelow = 4096

    /// The secret of an entry from `fileEntries`, opened from the row the entry kept: no search.
    /// The caller must drop entries when their items change (the mount does, on every change
    /// made through the daemon), or it reads the version the entry was made from.
    /// - Throws: as `fileSecret(of:accessGroups:approved:)`.
    public func fileSecret(of entry: FileEntry, accessGroups: [String], approved: Bool = false) throws -> SecureBytes {
        guard let row = entry.row else { return try fileSecret(of: entry.ref, accessGroups: accessGroups, approved: approved) }
        // No store to read: the keys' read side alone, as a search holds it.
        return try keys.gate.withReadLock {
            guard accessGroups.contains(entry.group) else { throw KeychainStatus.itemNotFound }
            let classKey = try availableKey(for: entry.protection)
            if !approved, let control = entry.attributes[.accessControl].flatMap(AccessControl.init), control.requiresPresence {
                throw KeychainStatus.interactionNotAllowed
            }
            guard let secret = try nilUnlessOutOfMemory({ try openFileSecret(row, classKey: classKey) })
            else { throw KeychainStatus.decode }
            return secret
        }
    }

    /// A file's secret by reference: one row read and opened, no query to parse. The mount calls
    /// this on every open, so it is the engine's shortest path to a secret; it applies the same
    /// rules as `readSecret`: the caller's groups, the lock, presence approval, damage.
    /// - Throws: `itemNotFound` (gone, or in a group the caller lacks), `interactionNotAllowed`
    ///   when locked or gated without approval, `decode` when damaged.
    public func fileSecret(of ref: PersistentRef, accessGroups: [String], approved: Bool = false) throws -> SecureBytes {
        try withReader { reader in
            let opened = try fileMatch(ref, accessGroups: accessGroups, needSecret: true, in: reader)
            guard let secret = opened.secret else { throw KeychainStatus.decode }
            if !approved, let control = opened.attributes[.accessControl].flatMap(AccessControl.init), control.requiresPresence {
                secret.wipe()
                throw KeychainStatus.interactionNotAllowed
            }
            return secret
        }
    }

    /// One item by reference, opened, if the caller's groups include its group. Call with the
    /// mutex held. - Throws: as `fileSecret(of:accessGroups:approved:)`, without the approval.
    func fileMatch(_ ref: PersistentRef, accessGroups: [String], needSecret: Bool) throws -> Match {
        try fileMatch(ref, accessGroups: accessGroups, needSecret: needSecret, in: writeContext)
    }

    /// The same on `context`.
    func fileMatch(_ ref: PersistentRef, accessGroups: [String], needSecret: Bool, in context: SearchContext) throws -> Match {
        guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
        guard let item = try context.store.item(uuid: ref.uuid), item.itemClass == ref.itemClass,
              accessGroups.contains(where: { context.groupToken($0, indexKey: indexKey) == item.groupToken })
        else { throw KeychainStatus.itemNotFound }
        let classKey = try availableKey(for: item.protection)
        guard let opened = try nilUnlessOutOfMemory({
                  try item.withSealedParts { try open($0, classKey: classKey, needSecret: needSecret, in: context) }
              }),
              !needSecret || opened.secret != nil
        else { throw KeychainStatus.decode }
        return opened
    }

    /// The secret of one item by reference, if the caller's groups include its group.
    /// - Throws: `itemNotFound`, `interactionNotAllowed` when locked, `decode` when damaged.
    public func readSecret(of ref: PersistentRef, accessGroups: [String], approved: Bool = false) throws -> SecureBytes {
        let r = try copyMatching([.valuePersistentRef: .data(ref.bytes), .synchronizable: .synchronizableAny, .returnData: true],
                                 accessGroups: accessGroups, approved: approved ? [ref] : [])
        guard let data = r.value?.data else { throw KeychainStatus.decode }
        return data
    }
}
