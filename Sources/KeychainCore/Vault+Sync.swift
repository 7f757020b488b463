import KeychainCrypto
import SQLiteStore

/// One synchronizable item as fleet sync carries it: decrypted, in guarded memory.
public struct SyncPayload: Sendable {
    public var uuid: [UInt8]
    public var itemClass: ItemClass
    public var protection: ProtectionClass
    /// The attribute blob (docs/vault-format.md, "Attribute blob"), dates and group included.
    public var attributes: SecureBytes
    public var secret: SecureBytes

    public init(uuid: [UInt8], itemClass: ItemClass, protection: ProtectionClass, attributes: SecureBytes, secret: SecureBytes) {
        self.uuid = uuid
        self.itemClass = itemClass
        self.protection = protection
        self.attributes = attributes
        self.secret = secret
    }

    public func wipe() {
        attributes.wipe()
        secret.wipe()
    }
}

/// What applying a remote change did to this vault, for the daemon's notifications.
public struct SyncApplied: Sendable {
    public var groups: [String]
    /// Generic-password names touched (before and after), for the mounts.
    public var names: [(service: [UInt8], account: [UInt8]?)]
}

/// What the vault remembers of an item it has exchanged with the sync server.
public struct SyncItemState: Equatable, Sendable {
    /// The item's `items.version` when it was last sent or received.
    public var localVersion: Int64
    /// The server's version of it then.
    public var serverVersion: Int64

    public init(localVersion: Int64, serverVersion: Int64) {
        self.localVersion = localVersion
        self.serverVersion = serverVersion
    }
}

/// The vault side of fleet sync (docs/sync.md): which synchronizable items changed since they
/// were last exchanged, their contents, and applying what other hosts wrote, keeping their
/// identifiers. Sync state lives in the `sync_items` table, created on first use, so an item
/// and its state change in one transaction.
extension Vault {
    /// Every item that may sync: `sync=1` and a class that may leave this machine. Reads only
    /// clear columns. - Returns: uuid and `items.version`.
    public func synchronizableItems() throws -> [(uuid: [UInt8], version: Int64)] {
        try mutex.withLock {
            var out: [(uuid: [UInt8], version: Int64)] = []
            try store.rows(protections: Self.exportableClasses, synchronizableOnly: true) { out.append(($0.uuid, $0.version)) }
            return out
        }
    }

    /// The decrypted item, or nil when it is gone or no longer synchronizable.
    /// - Throws: `interactionNotAllowed` when its class key is locked, `decode` when damaged.
    public func syncPayload(uuid: [UInt8]) throws -> SyncPayload? {
        try mutex.withLock {
            guard let item = try store.item(uuid: uuid), item.synchronizable, !item.protection.isThisDeviceOnly else { return nil }
            let m = try open(item, classKey: try availableKey(for: item.protection), needSecret: true)
            let secret = try m.secret ?? SecureBytes(count: 0)
            do {
                return SyncPayload(uuid: uuid, itemClass: item.itemClass, protection: item.protection,
                                   attributes: try ItemCodec.encode(m.attributes), secret: secret)
            } catch {
                secret.wipe()
                throw error
            }
        }
    }

    /// Writes another host's version of an item under its own uuid: a new row, or the row with
    /// that uuid rewritten. An item of this vault with the same primary key but another uuid
    /// is resolved as iCloud Keychain does: the lower uuid stays (the other is deleted here, or
    /// the incoming one is not written). Records `serverVersion` in the item's sync state.
    /// - Returns: what changed, or nil when the incoming item lost to a lower uuid.
    /// - Throws: `decode` for a payload that is not a synchronizable item, `interactionNotAllowed`.
    public func applySynced(_ p: SyncPayload, serverVersion: Int64) throws -> SyncApplied? {
        let attributes = try ItemCodec.decode(p.attributes)
        try Self.checkSyncedRecord(attributes, p)
        return try mutex.withLock {
            guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
            let classKey = try availableKey(for: p.protection)
            return try store.db.transaction {
                try createSyncTable()
                var applied = SyncApplied(groups: [], names: [])
                let existing = try store.item(uuid: p.uuid)
                if let e = existing, let old = try? open(e, classKey: try availableKey(for: e.protection), needSecret: false) {
                    note(old.attributes, e.itemClass, into: &applied)
                }
                let pk = IndexToken.primaryKey(attributes, itemClass: p.itemClass, key: indexKey)
                if let clash = try store.row(primaryKeyToken: pk), clash.uuid != p.uuid {
                    guard p.uuid.lexicographicallyPrecedes(clash.uuid) else { return nil }
                    if let old = try? open(clash, classKey: try availableKey(for: clash.protection), needSecret: false) {
                        note(old.attributes, clash.itemClass, into: &applied)
                    }
                    try store.delete(rowID: clash.rowID)
                }
                var item = try seal(uuid: p.uuid, rowID: existing?.rowID ?? 0, itemClass: p.itemClass, protection: p.protection,
                                    attributes: attributes, secret: p.secret, classKey: classKey, indexKey: indexKey,
                                    version: (existing?.version ?? 0) + 1)
                let tokens = lookupTokens(attributes, itemClass: p.itemClass, indexKey: indexKey)
                if existing != nil {
                    try store.replace(item, tokens: tokens)
                } else {
                    item.rowID = try store.insert(item, tokens: tokens)
                }
                try writeSyncState(p.uuid, SyncItemState(localVersion: item.version, serverVersion: serverVersion))
                note(attributes, p.itemClass, into: &applied)
                return applied
            }
        }
    }

    /// Deletes an item another host deleted, and forgets its sync state.
    /// - Returns: what changed, or nil when there was no such item.
    public func deleteSynced(uuid: [UInt8]) throws -> SyncApplied? {
        try mutex.withLock {
            try store.db.transaction {
                try createSyncTable()
                try store.db.prepare("DELETE FROM sync_items WHERE uuid = ?").bind(.blob(uuid)).run()
                guard let e = try store.item(uuid: uuid), e.synchronizable else { return nil }
                var applied = SyncApplied(groups: [], names: [])
                if let old = try? open(e, classKey: try availableKey(for: e.protection), needSecret: false) {
                    note(old.attributes, e.itemClass, into: &applied)
                }
                try store.delete(rowID: e.rowID)
                return applied
            }
        }
    }

    /// The sync state of every item exchanged so far, by uuid.
    public func syncStates() throws -> [[UInt8]: SyncItemState] {
        try mutex.withLock {
            try createSyncTable()
            let st = try store.db.prepare("SELECT uuid, local_version, server_version FROM sync_items")
            defer { st.reset() }
            var out: [[UInt8]: SyncItemState] = [:]
            while try st.step() {
                out[st.blob(0) ?? []] = SyncItemState(localVersion: st.int(1), serverVersion: st.int(2))
            }
            return out
        }
    }

    /// Records (or, with nil, forgets) what was exchanged for one item.
    public func setSyncState(_ uuid: [UInt8], _ state: SyncItemState?) throws {
        try mutex.withLock {
            try createSyncTable()
            if let state {
                try writeSyncState(uuid, state)
            } else {
                try store.db.prepare("DELETE FROM sync_items WHERE uuid = ?").bind(.blob(uuid)).run()
            }
        }
    }

    /// Forgets all sync state (leaving a circle).
    public func clearSyncStates() throws {
        try mutex.withLock {
            try createSyncTable()
            try store.db.execute("DELETE FROM sync_items")
        }
    }

    // MARK: Secrets bound to this machine

    /// A secret of fleet sync (host keys, circle keys), sealed under the
    /// AfterFirstUnlockThisDeviceOnly class key: it needs the passphrase and this machine's
    /// device key, so a copied vault or a backup never carries it.
    /// - Throws: `interactionNotAllowed` before the first unlock, `decode` when damaged or on
    ///   another machine.
    public func syncSecret(_ name: String) throws -> SecureBytes? {
        try mutex.withLock {
            guard let box = try store.readMeta("sync." + name) else { return nil }
            let key = try availableKey(for: .afterFirstUnlockThisDeviceOnly)
            do { return try AEAD.open(box, key: key, associatedData: syncSecretAD(name)) }
            catch { throw isAllocationFailure(error) ? KeychainStatus.allocate : KeychainStatus.decode }
        }
    }

    /// Stores (or, with nil, deletes) a secret of fleet sync; see `syncSecret`.
    public func setSyncSecret(_ name: String, _ value: SecureBytes?) throws {
        try mutex.withLock {
            guard let value else {
                try store.db.prepare("DELETE FROM meta WHERE key = ?").bind(.text("sync." + name)).run()
                return
            }
            let key = try availableKey(for: .afterFirstUnlockThisDeviceOnly)
            try store.writeMeta("sync." + name, AEAD.seal(value, key: key, associatedData: syncSecretAD(name)))
        }
    }

    // MARK: Internals (mutex held)

    private func syncSecretAD(_ name: String) -> [UInt8] {
        header.vaultID + Array("sync".utf8) + Array(name.utf8)
    }

    private func createSyncTable() throws {
        try store.db.execute("""
            CREATE TABLE IF NOT EXISTS sync_items(uuid BLOB PRIMARY KEY, local_version INTEGER NOT NULL,
                                                  server_version INTEGER NOT NULL) WITHOUT ROWID
            """)
    }

    private func writeSyncState(_ uuid: [UInt8], _ s: SyncItemState) throws {
        try store.db.prepare("INSERT OR REPLACE INTO sync_items(uuid, local_version, server_version) VALUES(?, ?, ?)")
            .bind(.blob(uuid), .integer(s.localVersion), .integer(s.serverVersion)).run()
    }

    private func note(_ a: Attributes, _ itemClass: ItemClass, into applied: inout SyncApplied) {
        if case .string(let g)? = a[.accessGroup], !applied.groups.contains(g) { applied.groups.append(g) }
        guard itemClass == .genericPassword, let s = a[.service]?.byteView else { return }
        applied.names.append((s, a[.account]?.byteView))
    }

    /// A synced record must look like what the vault itself stores: known attributes, its
    /// class's protection, a group, `sync` 1, never a ThisDeviceOnly class.
    private static func checkSyncedRecord(_ a: Attributes, _ p: SyncPayload) throws {
        let known = p.itemClass.knownAttributes
        guard p.uuid.count == 16, !p.protection.isThisDeviceOnly,
              a.keys.allSatisfy({ known.contains($0) || $0 == secretModified }),
              a[.accessible] == .string(p.protection.rawValue),
              case .string(let group)? = a[.accessGroup], !group.isEmpty,
              a[.synchronizable] == .number(1)
        else { throw KeychainStatus.decode }
        try ItemLimits.check(p.secret)
        if let c = a[.accessControl] {
            guard let control = AccessControl(c), control.protection == p.protection else { throw KeychainStatus.decode }
        }
    }
}
