import KeychainCrypto

/// The changes the file interface makes, each one engine transaction under the vault's mutex:
/// a daemon killed at any moment leaves the item as it was before or as it is after, never a
/// half (an emptied secret, a rename-over with both items or neither).
extension Vault {
    /// Replaces the secret of the item `ref` names (a written file's close).
    /// - Throws: `itemNotFound` (gone, or in a group the caller lacks), `interactionNotAllowed`
    ///   when locked, `param` for a secret past `ItemLimits.maximumSecretLength`, `decode`.
    public func storeFileSecret(_ secret: SecureBytes, in ref: PersistentRef, accessGroups: [String]) throws -> FileChange {
        try ItemLimits.check(secret)
        return try mutex.withLock {
            try store.db.transaction {
                let m = try fileMatch(ref, accessGroups: accessGroups, needSecret: false)
                return FileChange(entry: try reseal(m, attributes: m.attributes, secret: secret, secretChanged: true),
                                  groups: Self.groups(of: m.attributes))
            }
        }
    }

    /// Stores `secret` as the item `name`: into the first such item in `accessGroups`, else
    /// into a new item in the first group (a new file's first close; `created` tells which).
    /// A name with its group stores only in that group.
    /// - Throws: `missingEntitlement` without groups, and as `storeFileSecret(_:in:accessGroups:)`.
    public func storeFileSecret(_ secret: SecureBytes, named name: ItemName, accessGroups: [String]) throws -> FileChange {
        let q = try Self.fileQuery(name)
        let groups = name.narrowing(accessGroups)
        let prepared = try prepareAdd(name.attributes, secret: secret, accessGroups: groups)
        return try mutex.withLock {
            try store.db.transaction {
                if let m = try firstFileItem(q, accessGroups: groups, admitted: name.admits) {
                    return FileChange(entry: try reseal(m, attributes: m.attributes, secret: secret, secretChanged: true),
                                      groups: Self.groups(of: m.attributes))
                }
                let item = try insert(prepared)
                return FileChange(entry: fileEntry(item, prepared.attributes, keepRow: false),
                                  groups: Self.groups(of: prepared.attributes), created: true)
            }
        }
    }

    /// Makes the item `name` with `secret` in the caller's first group, and returns its entry.
    /// - Throws: `duplicateItem` when that group has it already, `missingEntitlement` without
    ///   groups, `interactionNotAllowed` when locked.
    public func createFile(_ name: ItemName, secret: SecureBytes, accessGroups: [String]) throws -> FileChange {
        let prepared = try prepareAdd(name.attributes, secret: secret, accessGroups: accessGroups)
        return try mutex.withLock {
            let item = try store.db.transaction { try insert(prepared) }
            return FileChange(entry: fileEntry(item, prepared.attributes, keepRow: false),
                              groups: Self.groups(of: prepared.attributes), created: true)
        }
    }

    /// Gives the item `ref` names the name `name` (`mv`). When an item of `visibleGroups`
    /// already has that name and `replacing` is true (rename(2) without RENAME_NOREPLACE), that
    /// item keeps its attributes and reference, takes the source's secret, and the source is
    /// deleted (an editor's save), all in the same transaction.
    /// - Parameter visibleGroups: where to look for the target (the caller may see items it
    ///   cannot change); nil for `accessGroups`.
    /// - Throws: `duplicateItem` when the name is taken and `replacing` is false (or an item the
    ///   caller cannot see has it), `missingEntitlement` when the target is in a group the
    ///   caller cannot change, `interactionNotAllowed` when the source needs presence and the
    ///   target does not (its secret would lose the gate), `itemNotFound` for the source.
    public func renameFile(_ ref: PersistentRef, to name: ItemName, replacing: Bool, accessGroups: [String],
                           visibleGroups: [String]? = nil) throws -> FileChange {
        let q = try Self.fileQuery(name)
        return try mutex.withLock {
            try store.db.transaction {
                let source = try fileMatch(ref, accessGroups: accessGroups, needSecret: true)
                guard source.stored.itemClass == name.itemClass else { throw KeychainStatus.param }  // no rename across classes
                defer { source.secret?.wipe() }
                // A rename keeps the item's group: a name with another group is no name it can take.
                if let group = name.group, source.attributes[.accessGroup] != .string(group) { throw KeychainStatus.param }
                // And its synchronizable value.
                guard name.admits(source.attributes) else { throw KeychainStatus.param }
                var target: Match?
                try forEachFileItem(q, accessGroups: name.narrowing(visibleGroups ?? accessGroups)) { item, attributes in
                    guard item.uuid != source.stored.uuid, name.admits(attributes) else { return true }
                    target = Match(stored: item.header, attributes: attributes, secret: nil)
                    return false
                }
                guard let target else {
                    var attributes = source.attributes
                    name.apply(to: &attributes)
                    return FileChange(entry: try reseal(source, attributes: attributes, secret: source.secret, secretChanged: false),
                                      groups: Self.groups(of: source.attributes).union(Self.groups(of: attributes)))
                }
                guard replacing else { throw KeychainStatus.duplicateItem }
                guard case .string(let group)? = target.attributes[.accessGroup], accessGroups.contains(group) else {
                    throw KeychainStatus.missingEntitlement
                }
                if Self.requiresPresence(source.attributes) && !Self.requiresPresence(target.attributes) {
                    throw KeychainStatus.interactionNotAllowed
                }
                let entry = try reseal(target, attributes: target.attributes, secret: source.secret, secretChanged: true)
                try store.delete(rowID: source.stored.rowID)
                return FileChange(entry: entry, groups: Self.groups(of: source.attributes).union(Self.groups(of: target.attributes)),
                                  replaced: entry.ref)
            }
        }
    }

    /// Cuts or zero-extends the secret of the item `ref` names to `size` bytes (`truncate -s`).
    /// - Throws: `param` for a size outside 0...`ItemLimits.maximumSecretLength`, and as
    ///   `storeFileSecret(_:in:accessGroups:)`.
    public func truncateFile(_ ref: PersistentRef, to size: Int, accessGroups: [String]) throws -> FileChange {
        guard size >= 0, size <= ItemLimits.maximumSecretLength else { throw KeychainStatus.param }
        let cut = try SecureBytes(count: size)
        defer { cut.wipe() }
        return try mutex.withLock {
            try store.db.transaction {
                let m = try fileMatch(ref, accessGroups: accessGroups, needSecret: size > 0)
                if let old = m.secret {
                    defer { old.wipe() }
                    let kept = min(size, old.count)
                    old.withUnsafeBytes { src in
                        cut.withUnsafeMutableBytes { if kept > 0 { $0.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: kept) } }
                    }
                }
                return FileChange(entry: try reseal(m, attributes: m.attributes, secret: cut, secretChanged: true),
                                  groups: Self.groups(of: m.attributes))
            }
        }
    }

    /// Deletes the items named `name` in `accessGroups` (`rm`; a name with its group: in that
    /// group only), in one transaction.
    /// - Returns: their access groups. - Throws: `itemNotFound` when there is none.
    @discardableResult
    public func deleteFile(_ name: ItemName, accessGroups: [String]) throws -> Set<String> {
        var query = name.attributes
        query[.synchronizable] = name.synchronizableFilter
        return try delete(query, accessGroups: name.narrowing(accessGroups))
    }

    // MARK: Internals (called with the mutex held)

    /// The first item `q` finds in `accessGroups`, opened without its secret.
    func firstFileItem(_ q: ParsedQuery, accessGroups: [String], admitted: (Attributes) -> Bool = { _ in true }) throws -> Match? {
        var found: Match?
        try forEachFileItem(q, accessGroups: accessGroups) { item, attributes in
            guard admitted(attributes) else { return true }
            found = Match(stored: item.header, attributes: attributes, secret: nil)
            return false
        }
        return found
    }

    /// Seals `m` again in its row with `attributes` and `secret` (nil: empty), one version on,
    /// under its own protection class; inside a transaction. - Returns: its new entry.
    func reseal(_ m: Match, attributes: Attributes, secret: SecureBytes?, secretChanged: Bool) throws -> FileEntry {
        guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
        var attributes = attributes
        let now = absoluteTimeNow()
        attributes[.modificationDate] = .date(now)
        if secretChanged { attributes[Self.secretModified] = .date(now) }
        let classKey = try availableKey(for: m.stored.protection)
        let item = try seal(uuid: m.stored.uuid, rowID: m.stored.rowID, itemClass: m.stored.itemClass,
                            protection: m.stored.protection, attributes: attributes, secret: secret, classKey: classKey,
                            indexKey: indexKey, version: m.stored.version + 1)
        try store.replace(item, tokens: lookupTokens(attributes, itemClass: item.itemClass, indexKey: indexKey))
        return fileEntry(item, attributes, keepRow: false)
    }

    static func groups(of attributes: Attributes) -> Set<String> {
        attributes[.accessGroup]?.stringValue.map { [$0] } ?? []
    }

    static func requiresPresence(_ attributes: Attributes) -> Bool {
        attributes[.accessControl].flatMap(AccessControl.init)?.requiresPresence ?? false
    }
}
