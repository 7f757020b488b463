import KeychainCrypto

/// A matched item with its decrypted parts.
struct Match {
    var stored: ItemHeader
    /// Every attribute; empty when the search opened only `selected`.
    var attributes: Attributes
    var secret: SecureBytes?
    /// The attributes a search that returns none checks (`ParsedQuery.checkedAttributes`), in
    /// place of `attributes`; nil when `attributes` holds them all.
    var selected: SelectedAttributes? = nil

    /// One attribute, from whichever of the two the item was opened with.
    func value(_ key: AttributeKey) -> AttributeValue? {
        if let selected { return selected[key] }
        return attributes[key]
    }
}

/// The values of a selection's attributes by their position in it, as a search that returns no
/// attributes opens them: read where they are, without a dictionary or a hashed name.
struct SelectedAttributes {
    let selection: AttributeSelection
    let values: [AttributeValue?]

    subscript(key: AttributeKey) -> AttributeValue? {
        selection.position(of: key).flatMap { values[$0] }
    }
}

/// The service and account of an item a change touched, after it and before it (the same for a
/// delete), so that a change made by reference can say which item it was (watchers, mounts).
public struct ChangedItemName: Sendable {
    public var service: AttributeValue?
    public var account: AttributeValue?
    public var previousService: AttributeValue?
    public var previousAccount: AttributeValue?
}

extension Vault {
    // MARK: Add

    /// Adds an item (`SecItemAdd`). The secret comes from `secret` or a `v_Data` entry.
    /// - Returns: what the return keys ask for, for the new item; `.none` without them.
    /// - Throws: `param`, `noSuchClass`, `noSuchAttr`, `duplicateItem`, `missingEntitlement`,
    ///   `interactionNotAllowed` (class key locked), `authFailed` (`akpu` without a passphrase).
    /// - Parameter beforeChange: called with the new item's reference once it is written and
    ///   before the commit (the daemon's audit line); a throw rolls the add back.
    @discardableResult
    public func add(_ input: Attributes, secret: SecureBytes? = nil, accessGroups: [String],
                    beforeChange: ([PersistentRef]) throws -> Void = { _ in }) throws -> QueryResult {
        let prepared = try prepareAdd(input, secret: secret, accessGroups: accessGroups)
        return try mutex.withLock {
            let stored = try store.db.transaction { try insert(prepared, beforeChange: beforeChange) }
            guard prepared.returns.any else { return .none }
            let data = try prepared.secret ?? SecureBytes(count: 0)
            let match = Match(stored: stored.header, attributes: prepared.attributes, secret: prepared.returns.data ? data : nil)
            return .value(try shape(match, returns: prepared.returns))
        }
    }

    /// Adds many items in one transaction: all are added or none. Return keys are ignored.
    /// For imports and benchmarks, where one durable commit per item would dominate.
    public func addAll(_ items: [(attributes: Attributes, secret: SecureBytes?)], accessGroups: [String]) throws {
        let prepared = try items.map { try prepareAdd($0.attributes, secret: $0.secret, accessGroups: accessGroups) }
        try mutex.withLock {
            try store.db.transaction { for p in prepared { _ = try insert(p) } }
        }
    }

    struct PreparedAdd {
        var itemClass: ItemClass
        var protection: ProtectionClass
        var attributes: Attributes
        var secret: SecureBytes?
        var returns: ReturnKeys
    }

    /// Checks and normalises an add's dictionary; needs no key.
    func prepareAdd(_ input: Attributes, secret: SecureBytes?, accessGroups: [String]) throws -> PreparedAdd {
        guard let classValue = input[.class] else { throw KeychainStatus.param }
        guard case .string(let className) = classValue else { throw KeychainStatus.param }
        guard let itemClass = ItemClass(name: className) else { throw KeychainStatus.noSuchClass }
        var attributes: Attributes = [:]
        var returns = ReturnKeys()
        var data = secret
        for (key, value) in input.sorted(by: { $0.key < $1.key }) where key != .class {
            if key.hasPrefix(.return) {
                try returns.set(key, value)
            } else if key == .valueData {
                guard data == nil else { throw KeychainStatus.param }
                data = try Self.secretBytes(value)
            } else if key.hasPrefix(.use) || key == .useDataProtectionKeychain {
                continue
            } else if key.hasPrefix(.value) || key.hasPrefix(.match) {
                throw KeychainStatus.param
            } else if key == .creationDate || key == .modificationDate {
                continue  // set by the store
            } else {
                guard itemClass.knownAttributes.contains(key) else { throw KeychainStatus.noSuchAttr }
                guard let v = normalize(value, for: key) else { throw KeychainStatus.param }
                attributes[key] = v
            }
        }
        if let data { try ItemLimits.check(data) }
        try Self.reconcileAccessControl(&attributes)
        try returns.resolveReference(for: itemClass)  // as in a search
        let protection = try Self.protection(attributes[.accessible]) ?? .default
        attributes[.accessible] = .string(protection.rawValue)
        let sync = attributes[.synchronizable]?.integerView ?? 0
        guard sync == 0 || sync == 1 else { throw KeychainStatus.param }
        attributes[.synchronizable] = .number(sync)
        if sync == 1 && protection.isThisDeviceOnly { throw KeychainStatus.param }
        if let g = attributes[.accessGroup] {
            guard case .string(let group) = g else { throw KeychainStatus.param }
            guard accessGroups.contains(group) else { throw KeychainStatus.missingEntitlement }
        } else {
            guard let first = accessGroups.first else { throw KeychainStatus.missingEntitlement }
            attributes[.accessGroup] = .string(first)
        }
        let now = absoluteTimeNow()
        attributes[.creationDate] = .date(now)
        attributes[.modificationDate] = .date(now)
        attributes[Self.secretModified] = .date(now)
        return PreparedAdd(itemClass: itemClass, protection: protection, attributes: attributes, secret: data,
                           returns: returns)
    }

    /// Seals and inserts a prepared item; called with the mutex held, inside a transaction.
    func insert(_ p: PreparedAdd, beforeChange: ([PersistentRef]) throws -> Void = { _ in }) throws -> StoredItem {
        if p.protection == .whenPasscodeSetThisDeviceOnly && !header.hasPassphrase { throw KeychainStatus.authFailed }
        let classKey = try availableKey(for: p.protection)
        guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
        var item = try seal(uuid: randomBytes(16), rowID: 0, itemClass: p.itemClass, protection: p.protection,
                        attributes: p.attributes, secret: p.secret, classKey: classKey, indexKey: indexKey, version: 1)
        item.rowID = try store.insert(item, tokens: lookupTokens(p.attributes, itemClass: p.itemClass, indexKey: indexKey))
        try beforeChange([PersistentRef(itemClass: p.itemClass, uuid: item.uuid)])  // before the commit
        return item
    }

    // MARK: Search

    /// Finds items (`SecItemCopyMatching`).
    /// - Throws: `itemNotFound`, `param`, `noSuchClass`, `noSuchAttr`, `missingEntitlement`,
    ///   `interactionNotAllowed` when only locked items match, `decode` when only damaged or
    ///   other-device items match.
    /// - Parameter approved: persistent references of presence-gated items whose use someone
    ///   approved for this call; other gated items' secrets stay out of reach.
    ///   `skipUnapproved` leaves other gated items out as if they did not match
    ///   (`kSecUseAuthenticationUISkip`); otherwise they make the search errSecInteractionNotAllowed.
    public func copyMatching(_ query: Attributes, accessGroups: [String],
                             approved: Set<PersistentRef> = [], skipUnapproved: Bool = false) throws -> QueryResult {
        var notRecorded: [PersistentRef]? = nil
        return try find(query, accessGroups: accessGroups, approved: approved, skipUnapproved: skipUnapproved,
                        secretsReturned: &notRecorded)
    }

    /// The same search; `secretsReturned` receives the references of the items whose secrets
    /// the result holds (for the daemon's audit log).
    public func copyMatching(_ query: Attributes, accessGroups: [String], approved: Set<PersistentRef> = [],
                             skipUnapproved: Bool = false, secretsReturned: inout [PersistentRef]) throws -> QueryResult {
        var recorded: [PersistentRef]? = secretsReturned
        defer { secretsReturned = recorded ?? [] }
        return try find(query, accessGroups: accessGroups, approved: approved, skipUnapproved: skipUnapproved,
                        secretsReturned: &recorded)
    }

    /// A search for one password by its class's whole primary key, without a query
    /// dictionary: the same search, result and errors as `copyMatching` of the query `[class,
    /// the primary key's attributes, agrp when given, the return keys asked for]` (the daemon's
    /// `lookup` request), with no approvals (a presence-gated secret is errSecInteractionNotAllowed).
    /// - Parameter primaryKey: the values of `itemClass.primaryKey`'s attributes, in its order.
    /// - Parameter secretsReturned: receives the references of the items whose secrets the
    ///   result holds (for the daemon's audit log).
    public func copyMatching(_ itemClass: ItemClass, primaryKey: [AttributeValue], accessGroup: String?,
                             returnData: Bool, returnAttributes: Bool, returnPersistentRef: Bool, accessGroups: [String],
                             secretsReturned: inout [PersistentRef]) throws -> QueryResult {
        guard itemClass == .genericPassword || itemClass == .internetPassword else { throw KeychainStatus.param }
        var returns = ReturnKeys()
        returns.data = returnData
        returns.attributes = returnAttributes
        returns.persistentRef = returnPersistentRef
        let q = try ParsedQuery(itemClass: itemClass, primaryKey: primaryKey, group: accessGroup, returns: returns)
        var recorded: [PersistentRef]? = secretsReturned
        defer { secretsReturned = recorded ?? [] }
        return try find(q, accessGroups: accessGroups, approved: [], skipUnapproved: false, secretsReturned: &recorded)
    }

    /// Both `copyMatching`s; `secretsReturned` nil records nothing.
    private func find(_ query: Attributes, accessGroups: [String], approved: Set<PersistentRef>, skipUnapproved: Bool,
                      secretsReturned: inout [PersistentRef]?) throws -> QueryResult {
        try find(try ParsedQuery(query, operation: .search), accessGroups: accessGroups, approved: approved,
                 skipUnapproved: skipUnapproved, secretsReturned: &secretsReturned)
    }

    /// A parsed search.
    private func find(_ q: ParsedQuery, accessGroups: [String], approved: Set<PersistentRef>, skipUnapproved: Bool,
                      secretsReturned: inout [PersistentRef]?) throws -> QueryResult {
        func run(_ context: SearchContext) throws -> QueryResult {
            let matches = try search(q, in: context, accessGroups: accessGroups, needSecret: q.returns.data,
                                     limit: q.maximumCount, approved: approved, skipUnapproved: skipUnapproved,
                                     keeping: q.checkedAttributes)
            guard q.returns.any else { return .none }
            if q.returns.data {
                // A private key made with kSecAttrIsExtractable false is used, never read.
                if q.itemClass == .key && matches.contains(where: Self.isUnextractable) { throw KeychainStatus.dataNotAvailable }
                // One made with kSecAttrIsSensitive leaves only wrapped, which is not offered.
                if q.itemClass == .key && matches.contains(where: Self.isSensitive) { throw KeychainStatus.passphraseRequired }
                if secretsReturned != nil {
                    secretsReturned = matches.map { PersistentRef(itemClass: $0.stored.itemClass, uuid: $0.stored.uuid) }
                }
            }
            if !q.returnsArray { return .value(try shape(matches[0], returns: q.returns)) }
            return .array(try matches.map { try shape($0, returns: q.returns) })
        }
        // A version-1 store gains its pair tokens on the write connection first.
        if !q.secretAttributes.isEmpty && !store.hasSecretAttributeTokens {
            return try mutex.withLock {
                rebuildSecretTokensIfNeeded(q)
                return try run(writeContext)
            }
        }
        return try withReader(run)
    }

    // MARK: Update

    /// Changes every matching item (`SecItemUpdate`); all or nothing.
    /// - Parameters:
    ///   - changes: attributes to set; `v_Data` (or `secret`) replaces the secret. A new
    ///     `pdmn` without an `accc` becomes the protection of the item's access control too.
    /// - Throws: `param` for return or match keys in the query, or a `pdmn` beside an `accc` of
    ///   another protection; `noSuchAttr` for an attribute that cannot be changed (including
    ///   `class`); `itemNotFound`; `duplicateItem` when a change collides with another item's
    ///   primary key; `missingEntitlement` for a group the caller lacks.
    /// - Returns: the access groups of the changed items, before and after (for watchers).
    @discardableResult
    /// - Parameter beforeChange: called with the references of the changed items once they are
    ///   written and before the commit (the daemon's audit lines); a throw rolls the change back.
    /// - Parameter named: called once the change is committed with the names of the changed items.
    public func update(_ query: Attributes, changes: Attributes, secret: SecureBytes? = nil,
                       accessGroups: [String], beforeChange: ([PersistentRef]) throws -> Void = { _ in },
                       named: ([ChangedItemName]) -> Void = { _ in }) throws -> Set<String> {
        let q = try ParsedQuery(query, operation: .update)
        var newSecret = secret
        var set: Attributes = [:]
        guard !changes.isEmpty || secret != nil else { throw KeychainStatus.param }
        for (key, value) in changes.sorted(by: { $0.key < $1.key }) {
            if key == .valueData {
                guard newSecret == nil else { throw KeychainStatus.param }
                newSecret = try Self.secretBytes(value)
            } else if key.hasPrefix(.return) || key.hasPrefix(.match) || key.hasPrefix(.value) {
                throw KeychainStatus.param
            } else if key.hasPrefix(.use) || key == .useDataProtectionKeychain {
                continue
            } else {
                guard key != .class, key != .creationDate, key != .modificationDate,
                      q.itemClass.knownAttributes.contains(key) else { throw KeychainStatus.noSuchAttr }
                guard let v = normalize(value, for: key) else { throw KeychainStatus.param }
                set[key] = v
            }
        }
        if let p = set[.accessible] { _ = try Self.protection(p) }
        if set[.accessControl] != nil { try Self.reconcileAccessControl(&set) }
        if let g = set[.accessGroup] {
            guard case .string(let group) = g else { throw KeychainStatus.param }
            guard accessGroups.contains(group) else { throw KeychainStatus.missingEntitlement }
        }
        if let s = set[.synchronizable]?.integerView, s != 0 && s != 1 { throw KeychainStatus.param }
        if let newSecret { try ItemLimits.check(newSecret) }

        return try mutex.withLock {
            let matches = try search(q, in: writeContext, accessGroups: accessGroups, needSecret: newSecret == nil,
                                     limit: Int.max)
            guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
            let now = absoluteTimeNow()
            var rewritten: [(StoredItem, [[UInt8]])] = []
            var groups = Set<String>()
            var names: [ChangedItemName] = []
            for m in matches {
                var attributes = m.attributes.merging(set) { _, new in new }
                names.append(ChangedItemName(service: attributes[.service], account: attributes[.account],
                                             previousService: m.attributes[.service], previousAccount: m.attributes[.account]))
                for g in [m.attributes[.accessGroup], attributes[.accessGroup]] { if case .string(let name)? = g { groups.insert(name) } }
                // A new protection alone carries the item's access control with it, flags kept,
                // so the two never disagree; given beside a new access control it must agree
                // with it (reconciled above, as in an add).
                if set[.accessControl] == nil, case .string(let name)? = set[.accessible],
                   let p = ProtectionClass(rawValue: name),
                   let old = m.attributes[.accessControl].flatMap(AccessControl.init) {
                    attributes[.accessControl] = AccessControl(protection: p, flags: old.flags).value
                }
                if let control = attributes[.accessControl].flatMap(AccessControl.init),
                   attributes[.accessible] != .string(control.protection.rawValue) { throw KeychainStatus.param }
                let protection = try Self.protection(attributes[.accessible]) ?? .default
                if attributes[.synchronizable]?.integerView == 1 && protection.isThisDeviceOnly { throw KeychainStatus.param }
                if protection == .whenPasscodeSetThisDeviceOnly && !header.hasPassphrase { throw KeychainStatus.authFailed }
                attributes[.modificationDate] = .date(now)
                if newSecret != nil { attributes[Self.secretModified] = .date(now) }
                let classKey = try availableKey(for: protection)
                let item = try seal(uuid: m.stored.uuid, rowID: m.stored.rowID, itemClass: q.itemClass, protection: protection,
                                attributes: attributes, secret: newSecret ?? m.secret, classKey: classKey,
                                indexKey: indexKey, version: m.stored.version + 1)
                rewritten.append((item, lookupTokens(attributes, itemClass: q.itemClass, indexKey: indexKey)))
            }
            try store.db.transaction {
                for (item, tokens) in rewritten { try store.replace(item, tokens: tokens) }
                try beforeChange(matches.map { PersistentRef(itemClass: $0.stored.itemClass, uuid: $0.stored.uuid) })
            }
            named(names)
            return groups
        }
    }

    // MARK: Delete

    /// Deletes every matching item (`SecItemDelete`). `m_Limit` is accepted and ignored.
    /// - Throws: `itemNotFound`, `param` for return keys, and the search errors.
    /// - Returns: the access groups of the deleted items (for watchers).
    @discardableResult
    /// - Parameter beforeChange: as for `update`, with the items about to be deleted.
    public func delete(_ query: Attributes, accessGroups: [String],
                       beforeChange: ([PersistentRef]) throws -> Void = { _ in },
                       named: ([ChangedItemName]) -> Void = { _ in }) throws -> Set<String> {
        let q = try ParsedQuery(query, operation: .delete)
        return try mutex.withLock {
            let matches = try search(q, in: writeContext, accessGroups: accessGroups, needSecret: false, limit: Int.max)
            try store.db.transaction {
                for m in matches { try store.delete(rowID: m.stored.rowID) }
                try beforeChange(matches.map { PersistentRef(itemClass: $0.stored.itemClass, uuid: $0.stored.uuid) })
            }
            named(matches.map { ChangedItemName(service: $0.attributes[.service], account: $0.attributes[.account],
                                                previousService: $0.attributes[.service], previousAccount: $0.attributes[.account]) })
            return Set(matches.compactMap { m -> String? in
                if case .string(let name)? = m.attributes[.accessGroup] { return name }
                return nil
            })
        }
    }

    /// When the secret last changed, kept beside Apple's `mdat` (which any attribute change
    /// moves) so that a file's mtime changes only with its contents. Never returned.
    public static let secretModified = AttributeKey.secretModificationDate

    // MARK: Internals (called with the mutex held, or on a reader with the keys' read side held)

    /// The class key, or why it is missing.
    func availableKey(for protection: ProtectionClass) throws -> SecureBytes {
        if keys.foreignDeviceClasses.contains(protection) { throw KeychainStatus.decode }
        if let key = keys.key(for: protection) {
            if protection == .whenPasscodeSetThisDeviceOnly && !keys.hasPassphrase { throw KeychainStatus.interactionNotAllowed }
            return key
        }
        if protection.isThisDeviceOnly && !madeHere { throw KeychainStatus.decode }
        throw KeychainStatus.interactionNotAllowed
    }

    /// The items `q` finds, opened, in insertion order, at most `limit`.
    ///
    /// A query that names its class's whole primary key is at most one row per (group,
    /// synchronizable value): a point lookup each in the unique `pk_token` index, with the token
    /// `seal` stored computed from the query's values (`IndexToken.primaryKey`, the same
    /// function, so equal values give equal bytes). Only when that finds nothing to return does
    /// the search ask the `tokens` index, as every other query does, so that a row whose clear
    /// columns were tampered with still gives errSecDecode and a locked item
    /// errSecInteractionNotAllowed, exactly as before.
    /// - Parameter keeping: the attributes each match needs (nil: all); a search whose caller
    ///   returns no attributes opens only those it checks (`ParsedQuery.checkedAttributes`),
    ///   read by position in the selection (`Match.selected`).
    func search(_ q: ParsedQuery, in context: SearchContext, accessGroups: [String], needSecret: Bool, limit: Int,
                approved: Set<PersistentRef> = [], skipUnapproved: Bool = false,
                keeping: AttributeSelection? = nil) throws -> [Match] {
        if let g = q.group {
            guard accessGroups.contains(g) else { throw KeychainStatus.missingEntitlement }
        } else {
            // A caller with no groups sees nothing, as an outsider should: not found.
            guard !accessGroups.isEmpty else { throw KeychainStatus.itemNotFound }
        }
        guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
        var matches: [Match] = []
        matches.reserveCapacity(min(limit, 4))
        var unavailable: KeychainStatus?
        var damaged = false
        func visit(_ item: SealedParts) throws -> Bool {
            let classKey: SecureBytes
            do { classKey = try availableKey(for: item.header.protection) } catch let status as KeychainStatus {
                if unavailable != .decode { unavailable = status }
                return true
            }
            guard let opened = try nilUnlessOutOfMemory({
                try open(item, classKey: classKey, needSecret: needSecret, in: context, keeping: keeping)
            }) else {
                damaged = true
                return true
            }
            // The tokens only narrow: the opened attributes decide (a token collision finds nothing).
            // A closure, not `opened.value` itself: that would copy the match into a context.
            guard q.matchesFilters({ opened.value($0) }),
                  q.secretAttributes.isEmpty || SecretServicePairs.matches(SecretServicePairs.of(opened.attributes), q.secretAttributes)
            else { return true }
            // A presence-gated secret needs an approval the engine cannot give: as if locked.
            if needSecret, let control = opened.value(.accessControl).flatMap(AccessControl.init), control.requiresPresence,
               !approved.contains(PersistentRef(itemClass: item.header.itemClass, uuid: item.header.uuid)) {
                opened.secret?.wipe()
                if !skipUnapproved { unavailable = unavailable ?? .interactionNotAllowed }
                return true
            }
            matches.append(opened)
            return matches.count < limit
        }
        let groups = q.group.map { [$0] } ?? accessGroups
        let syncValues = q.synchronizable.map { $0 ? Self.onlySynchronized : Self.onlyUnsynchronized } ?? Self.eitherSynchronized
        if q.namesPrimaryKey && groups.count * syncValues.count <= Self.primaryKeyLookupLimit {
            try primaryKeyLookups(q, groups: groups, syncValues: syncValues, in: context, indexKey: indexKey, visit: visit)
            if !matches.isEmpty { return matches }
            // Found nothing to return: the token search below meets the same rows again, and
            // decides the status.
            unavailable = nil
            damaged = false
        }
        let groupTokens = groups.map { context.groupToken($0, indexKey: indexKey) }
        // In primary-key order, most selective first: the store starts from the first token.
        let tokens = q.itemClass.primaryKey.compactMap { name in
            q.filter(name).map { IndexToken.attribute(name, $0, itemClass: q.itemClass, key: indexKey) }
        } + secretSearchTokens(q, indexKey: indexKey)
        try context.store.candidates(itemClass: q.itemClass, groupTokens: groupTokens, synchronizable: q.synchronizable,
                                     protection: q.protection, tokens: tokens, uuid: q.persistentRef?.uuid) { row in
            try row.withSealedParts(visit)
        }
        if matches.isEmpty {
            if damaged { throw KeychainStatus.decode }
            if let unavailable { throw unavailable }
            throw KeychainStatus.itemNotFound
        }
        return matches
    }

    /// Point lookups beyond this many (groups times synchronizable values) cost more than one
    /// token search.
    static let primaryKeyLookupLimit = 8
    private static let onlySynchronized = [true], onlyUnsynchronized = [false], eitherSynchronized = [false, true]

    /// The rows of `q`'s primary key in each group and synchronizable value, visited in
    /// insertion order: one row in place, several copied and sorted by row id.
    private func primaryKeyLookups(_ q: ParsedQuery, groups: [String], syncValues: [Bool], in context: SearchContext,
                                   indexKey: SecureBytes, visit: (SealedParts) throws -> Bool) throws {
        var found: [StoredItem] = []
        let single = groups.count * syncValues.count == 1
        try withUnsafeTemporaryAllocation(byteCount: 32, alignment: 1) { token in
            for group in groups {
                let groupToken = context.groupToken(group, indexKey: indexKey)
                for sync in syncValues {
                    IndexToken.primaryKey(itemClass: q.itemClass, key: indexKey, into: token, group: .string(group),
                                          synchronizable: .number(sync ? 1 : 0)) { q.filter($0) }
                    try context.store.candidate(primaryKeyToken: UnsafeRawBufferPointer(token)) { row in
                        // The clear columns a token search filters by; a row that differs is not
                        // this query's (or is damaged: the token search below tells which).
                        let h = row.header
                        guard h.itemClass == q.itemClass, h.synchronizable == sync,
                              q.protection == nil || h.protection == q.protection,
                              q.persistentRef.map({ $0.uuid == h.uuid }) ?? true,
                              row.groupTokenEquals(groupToken)
                        else { return }
                        if single { _ = try row.withSealedParts(visit) } else { found.append(row.stored()) }
                    }
                }
            }
        }
        for item in found.sorted(by: { $0.rowID < $1.rowID }) {
            guard try item.withSealedParts(visit) else { break }
        }
    }

    static func matches(_ attributes: Attributes, filters: Attributes, itemClass: ItemClass) -> Bool {
        matches(filters: filters, itemClass: itemClass) { attributes[$0] }
    }

    /// The same over attributes read by `value`.
    static func matches(filters: Attributes, itemClass: ItemClass, _ value: (AttributeKey) -> AttributeValue?) -> Bool {
        for (key, wanted) in filters where !matches(key, wanted, itemClass: itemClass, value) { return false }
        return true
    }

    /// Whether the attribute `key`, read by `value`, passes its filter `wanted`; a primary-key
    /// attribute the item lacks has its kind's empty value.
    static func matches(_ key: AttributeKey, _ wanted: AttributeValue, itemClass: ItemClass,
                        _ value: (AttributeKey) -> AttributeValue?) -> Bool {
        let have = value(key) ?? (itemClass.primaryKey.contains(key) ? AttributeKind.of(key).empty : nil)
        guard let have, have.matches(wanted) || Self.bothEmpty(have, wanted) else { return false }
        return true
    }

    /// An empty string and empty data are the same "missing" value.
    private static func bothEmpty(_ a: AttributeValue, _ b: AttributeValue) -> Bool {
        a.byteView?.isEmpty == true && b.byteView?.isEmpty == true
    }

    /// Opens an item's key, attributes and, when asked, secret. Any failure means damage.
    /// Call with the mutex held.
    func open(_ item: StoredItem, classKey: SecureBytes, needSecret: Bool) throws -> Match {
        try item.withSealedParts { try open($0, classKey: classKey, needSecret: needSecret, in: writeContext) }
    }

    /// The same for sealed parts wherever they are, on `context`'s scratch memory: the item key
    /// and the attribute plaintext are opened there (no allocation) and zeroed before this
    /// returns; only the secret gets guarded memory of its own, as it leaves with the result.
    /// The three parts' associated data differ only in their last byte, so it is built once.
    /// `keeping` opens only its attributes, read by position (`Match.selected`); `trimming`
    /// opens only its attributes into `Match.attributes`.
    func open(_ item: SealedParts, classKey: SecureBytes, needSecret: Bool, in context: SearchContext,
              keeping: AttributeSelection? = nil, trimming: AttributeSelection? = nil) throws -> Match {
        let h = item.header
        return try ItemCodec.withAssociatedData(vaultID: vaultID, uuid: h.uuid, itemClass: h.itemClass,
                                                protection: h.protection, part: .itemKey) { ad in
            try context.scratch.withUnsafeMutableBytes { scratch in
                let keyLength = AEAD.keyLength
                let plainLength = item.attributes.count - AEAD.overhead
                let inPlace = plainLength >= 0 && keyLength + plainLength <= scratch.count
                let itemKey = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<keyLength])
                defer { wipeMemory(UnsafeMutableRawBufferPointer(rebasing: scratch[0..<(inPlace ? keyLength + plainLength : keyLength)])) }
                try openItemKey(item.wrappedKey, classKey: classKey, associatedData: UnsafeRawBufferPointer(ad), into: itemKey)
                attributeOpens.wrappingAdd(1, ordering: .relaxed)
                ad[ad.count - 1] = ItemCodec.Part.attributes.rawValue
                var match = Match(stored: h, attributes: [:], secret: nil)
                func decode(_ plain: UnsafeRawBufferPointer) throws {
                    if let keeping {
                        match.selected = SelectedAttributes(selection: keeping, values: try ItemCodec.decode(plain, selecting: keeping))
                    } else {
                        match.attributes = try ItemCodec.decode(plain, keeping: trimming)
                    }
                }
                if inPlace {
                    let plain = UnsafeMutableRawBufferPointer(rebasing: scratch[keyLength..<keyLength + plainLength])
                    try AEAD.open(item.attributes, key: UnsafeRawBufferPointer(itemKey), associatedData: UnsafeRawBufferPointer(ad), into: plain)
                    try decode(UnsafeRawBufferPointer(plain))
                } else {
                    let plain = try AEAD.open(item.attributes, key: UnsafeRawBufferPointer(itemKey), associatedData: UnsafeRawBufferPointer(ad))
                    defer { plain.wipe() }
                    try plain.withUnsafeBytes { try decode($0) }
                }
                // The clear columns must agree with the sealed attributes.
                guard match.value(.accessible) == .string(h.protection.rawValue),
                      match.value(.synchronizable)?.integerView == (h.synchronizable ? 1 : 0),
                      case .string(let group)? = match.value(.accessGroup), let indexKey = keys.indexKey,
                      context.groupToken(group, indexKey: indexKey).withUnsafeBytes({ sameBytes($0, item.groupToken) })
                else { throw KeychainStatus.decode }
                ad[ad.count - 1] = ItemCodec.Part.secret.rawValue
                if needSecret {
                    match.secret = try AEAD.open(item.secret, key: UnsafeRawBufferPointer(itemKey), associatedData: UnsafeRawBufferPointer(ad))
                }
                return match
            }
        }
    }

    /// Writes the item key sealed in `box` under `ad` into `out`: a copy of the one kept in
    /// `openedItemKeys` when this box was opened before (a lookup of the same item again, a file
    /// read again), else opened with `classKey` and kept. The kept key answers only the same
    /// box under the same associated data, so it never stands in for a check the open makes.
    func openItemKey(_ box: UnsafeRawBufferPointer, classKey: SecureBytes, associatedData ad: UnsafeRawBufferPointer,
                     into out: UnsafeMutableRawBufferPointer) throws {
        let sealed = SealedKey(box: box, associatedData: ad)
        if let sealed, let kept = keptItemKey(sealed), kept.count == out.count {
            kept.withUnsafeBytes { out.copyMemory(from: $0) }
            return
        }
        try classKey.withUnsafeBytes { k in try AEAD.open(box, key: k, associatedData: ad, into: out) }
        // Out of guarded memory: the key is not kept, the open stands.
        guard let sealed, let copy = try? SecureBytes(copying: UnsafeRawBufferPointer(out)) else { return }
        keepItemKey(copy, for: sealed)
    }

    private func keptItemKey(_ sealed: SealedKey) -> SecureBytes? { openedItemKeys.withLock { $0[sealed] } }

    private func keepItemKey(_ key: SecureBytes, for sealed: SealedKey) {
        openedItemKeys.withLock { keys in
            if keys.count >= Self.itemKeyLimit { keys.removeAll(keepingCapacity: true) }  // a key a reader still holds lives on with it
            keys[sealed] = key
        }
    }

    /// Opens only an item's key and secret, for a row whose attributes `open` already checked.
    /// The item key is kept in `openedItemKeys` for the next open of the same file. Call with the
    /// mutex held, or on a reader.
    func openFileSecret(_ item: StoredItem, classKey: SecureBytes) throws -> SecureBytes {
        // The two parts' associated data differ only in the last byte, the part.
        var ad = associatedData(item, .itemKey)
        let sealed = item.wrappedKey.withUnsafeBytes { box in ad.withUnsafeBytes { SealedKey(box: box, associatedData: $0) } }
        let itemKey: SecureBytes
        if let sealed, let kept = keptItemKey(sealed) {
            itemKey = kept
        } else {
            itemKey = try AEAD.open(item.wrappedKey, key: classKey, associatedData: ad)
            if let sealed { keepItemKey(itemKey, for: sealed) }
        }
        ad[ad.count - 1] = ItemCodec.Part.secret.rawValue
        return try AEAD.open(item.secret, key: itemKey, associatedData: ad)
    }

    /// What binds one sealed part to its vault, item, class and protection.
    func associatedData(_ item: StoredItem, _ part: ItemCodec.Part) -> [UInt8] {
        ItemCodec.associatedData(vaultID: vaultID, uuid: item.uuid, itemClass: item.itemClass,
                                 protection: item.protection, part: part)
    }

    /// Seals an item's parts under a fresh item key.
    func seal(uuid: [UInt8], rowID: Int64, itemClass: ItemClass, protection: ProtectionClass, attributes: Attributes,
              secret: SecureBytes?, classKey: SecureBytes, indexKey: SecureBytes, version: Int64) throws -> StoredItem {
        let ad = { (part: ItemCodec.Part) in
            ItemCodec.associatedData(vaultID: self.vaultID, uuid: uuid, itemClass: itemClass, protection: protection, part: part)
        }
        let itemKey = try SecureBytes.random(count: 32)
        defer { itemKey.wipe() }
        let plainAttributes = try ItemCodec.encode(attributes)
        defer { plainAttributes.wipe() }
        let sealedSecret = secret.map { AEAD.seal($0, key: itemKey, associatedData: ad(.secret)) }
            ?? AEAD.seal(UnsafeRawBufferPointer(start: nil, count: 0), key: itemKey, associatedData: ad(.secret))
        guard case .string(let group)? = attributes[.accessGroup] else { preconditionFailure("agrp is set before sealing") }
        return StoredItem(
            rowID: rowID, uuid: uuid, itemClass: itemClass, protection: protection,
            synchronizable: attributes[.synchronizable]?.integerView == 1,
            groupToken: IndexToken.group(group, key: indexKey),
            primaryKeyToken: IndexToken.primaryKey(attributes, itemClass: itemClass, key: indexKey),
            wrappedKey: AEAD.seal(itemKey, key: classKey, associatedData: ad(.itemKey)),
            attributes: AEAD.seal(plainAttributes, key: itemKey, associatedData: ad(.attributes)),
            secret: sealedSecret, version: version)
    }

    /// One token per primary-key attribute (missing ones as empty), for indexed lookups, and a
    /// generic password's Secret Service pair tokens.
    func lookupTokens(_ attributes: Attributes, itemClass: ItemClass, indexKey: SecureBytes) -> [[UInt8]] {
        itemClass.primaryKey.map { name in
            IndexToken.attribute(name, attributes[name] ?? AttributeKind.of(name).empty, itemClass: itemClass, key: indexKey)
        } + secretAttributeTokens(attributes, itemClass: itemClass, indexKey: indexKey)
    }

    func shape(_ m: Match, returns: ReturnKeys) throws -> ReturnedValue {
        if returns.count == 1 && returns.data { return .data(try m.secret ?? SecureBytes(count: 0)) }
        let ref = PersistentRef(itemClass: m.stored.itemClass, uuid: m.stored.uuid).bytes
        if returns.count == 1 && returns.persistentRef { return .persistentRef(ref) }
        var attributes: Attributes = [:]
        if returns.attributes {
            attributes = m.attributes.filter { !$0.key.hasPrefix(.store) }
            attributes[.class] = .string(m.stored.itemClass.rawValue)
        }
        return .item(FoundItem(attributes: attributes, secret: returns.data ? (try m.secret ?? SecureBytes(count: 0)) : nil,
                               persistentRef: returns.persistentRef ? ref : nil))
    }

    /// An access control (`accc`) carries a protection class: it becomes `pdmn`, and a different
    /// `pdmn` given beside it is errSecParam.
    static func reconcileAccessControl(_ attributes: inout Attributes) throws {
        guard let value = attributes[.accessControl] else { return }
        guard let control = AccessControl(value) else { throw KeychainStatus.param }
        if let p = attributes[.accessible], p != .string(control.protection.rawValue) { throw KeychainStatus.param }
        attributes[.accessible] = .string(control.protection.rawValue)
        attributes[.accessControl] = control.value
    }

    static func protection(_ value: AttributeValue?) throws -> ProtectionClass? {
        guard let value else { return nil }
        guard case .string(let name) = value, let p = ProtectionClass(rawValue: name) else { throw KeychainStatus.param }
        return p
    }

    static func secretBytes(_ value: AttributeValue) throws -> SecureBytes {
        switch value {
        case .data(let d): return try SecureBytes(copying: d)
        case .string(let s): return try SecureBytes(copying: Array(s.utf8))
        default: throw KeychainStatus.param
        }
    }
}
