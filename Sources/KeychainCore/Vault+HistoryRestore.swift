import KeychainCrypto

/// Bringing a version kept in the history back (`keychainfs history --restore ID`, docs/sync.md,
/// "Conflicts"): written as a change made here, which a round then sends like any other.
extension Vault {
    /// What a restore wrote: whether it made a new item or rewrote one, and the names touched.
    public struct Restored: Sendable {
        public var added: Bool
        public var applied: SyncApplied
    }

    /// Writes the version kept under `id` back. The item it belongs to now (the same uuid, or
    /// the item that holds its primary key, such as the lower uuid it lost to) is rewritten
    /// with it, a new local version; with none (it lost to a delete) it becomes a new item with
    /// a new uuid, as a server may still hold the old one's tombstone. The kept version stays
    /// in the history. One transaction.
    /// - Throws: `itemNotFound` for an id the history does not hold, `interactionNotAllowed`
    ///   when its class key is locked, `decode` when it is damaged, `duplicateItem` when its
    ///   primary key is now another item's than the one it belongs to.
    public func restoreFromHistory(id: Int64) throws -> Restored {
        try mutex.withLock {
            try store.db.transaction {
                try createHistoryTable()
                let st = try store.db.prepare("SELECT item, cls, pdmn, wrapped_key, attrs, data FROM item_history WHERE id = ?")
                defer { st.reset() }
                try st.bind(.integer(id))
                guard try st.step() else { throw KeychainStatus.itemNotFound }
                guard let cls = ItemClass(code: UInt8(clamping: st.int(1))), let pdmn = ProtectionClass(code: UInt8(clamping: st.int(2)))
                else { throw KeychainStatus.decode }
                let kept = StoredItem(rowID: 0, uuid: st.blob(0) ?? [], itemClass: cls, protection: pdmn, synchronizable: true,
                                      groupToken: [], primaryKeyToken: [], wrappedKey: st.blob(3) ?? [],
                                      attributes: st.blob(4) ?? [], secret: st.blob(5) ?? [], version: 0)
                let classKey = try availableKey(for: pdmn)
                guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
                let (opened, secret) = try openKept(kept, classKey: classKey, needSecret: true)
                defer { secret?.wipe() }
                var attributes = opened
                let now = absoluteTimeNow()
                attributes[.modificationDate] = .date(now)
                attributes[Self.secretModified] = .date(now)
                let pk = IndexToken.primaryKey(attributes, itemClass: cls, key: indexKey)
                let holder = try store.row(primaryKeyToken: pk)
                let current = try store.item(uuid: kept.uuid) ?? holder
                if let holder, let current, holder.uuid != current.uuid { throw KeychainStatus.duplicateItem }

                var applied = SyncApplied(groups: [], names: [])
                if let current, let old = try? open(current, classKey: try availableKey(for: current.protection), needSecret: false) {
                    note(old.attributes, current.itemClass, into: &applied)
                }
                var item = try seal(uuid: current?.uuid ?? randomBytes(16), rowID: current?.rowID ?? 0, itemClass: cls,
                                    protection: pdmn, attributes: attributes, secret: secret, classKey: classKey,
                                    indexKey: indexKey, version: (current?.version ?? 0) + 1)
                let tokens = lookupTokens(attributes, itemClass: cls, indexKey: indexKey)
                if current != nil {
                    try store.replace(item, tokens: tokens)
                } else {
                    item.rowID = try store.insert(item, tokens: tokens)
                }
                note(attributes, cls, into: &applied)
                return Restored(added: current == nil, applied: applied)
            }
        }
    }
}
