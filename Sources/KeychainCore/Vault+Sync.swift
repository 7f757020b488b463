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

/// A change another host made, as fleet sync applies it.
public enum SyncChange: Sendable {
    case write(SyncPayload, serverVersion: Int64)
    case delete(uuid: [UInt8])
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
    /// What a round must send, from clear columns only, among the items changed since a round
    /// last found them in step (`sync_dirty`): synchronizable items changed since they were last
    /// exchanged, or never were (`state` nil), in insertion order; and exchanged items that are
    /// gone or no longer synchronizable.
    public func syncChanges() throws -> (changed: [(uuid: [UInt8], version: Int64, state: SyncItemState?)],
                                         gone: [(uuid: [UInt8], state: SyncItemState)]) {
        try mutex.withLock {
            try createSyncTable()
            var changed: [(uuid: [UInt8], version: Int64, state: SyncItemState?)] = []
            let st = try store.db.prepare("""
                SELECT i.uuid, i.version, s.local_version, s.server_version FROM sync_dirty d JOIN items i ON i.uuid = d.uuid
                LEFT JOIN sync_items s ON s.uuid = i.uuid WHERE \(Self.unsentCondition) ORDER BY i.rowid
                """)
            defer { st.reset() }
            while try st.step() {
                changed.append((st.blob(0) ?? [], st.int(1),
                                st.isNull(2) ? nil : SyncItemState(localVersion: st.int(2), serverVersion: st.int(3))))
            }
            var gone: [(uuid: [UInt8], state: SyncItemState)] = []
            let g = try store.db.prepare("""
                SELECT s.uuid, s.local_version, s.server_version FROM sync_dirty d JOIN sync_items s ON s.uuid = d.uuid
                WHERE \(Self.goneCondition)
                """)
            defer { g.reset() }
            while try g.step() {
                gone.append((g.blob(0) ?? [], SyncItemState(localVersion: g.int(1), serverVersion: g.int(2))))
            }
            return (changed, gone)
        }
    }

    /// Forgets the items a round looked at and found in step with the server: what is neither
    /// to send nor gone. Those still to send (a locked class key, a lost swap) stay.
    public func pruneSyncChanges() throws {
        try mutex.withLock {
            try createSyncTable()
            try store.db.execute("""
                DELETE FROM sync_dirty WHERE
                NOT EXISTS (SELECT 1 FROM items i LEFT JOIN sync_items s ON s.uuid = i.uuid
                            WHERE i.uuid = sync_dirty.uuid AND \(Self.unsentCondition))
                AND NOT EXISTS (SELECT 1 FROM sync_items s WHERE s.uuid = sync_dirty.uuid AND \(Self.goneCondition))
                """)
        }
    }

    /// The sync state of one item; nil when it was never exchanged.
    public func syncState(_ uuid: [UInt8]) throws -> SyncItemState? {
        try mutex.withLock {
            try createSyncTable()
            let st = try store.db.prepare("SELECT local_version, server_version FROM sync_items WHERE uuid = ?")
            defer { st.reset() }
            try st.bind(.blob(uuid))
            return try st.step() ? SyncItemState(localVersion: st.int(0), serverVersion: st.int(1)) : nil
        }
    }

    /// The sync state of each of `uuids` (nil: never exchanged), read under one lock, in the
    /// order of the uuids (the index's), so each page of it is read once.
    public func syncStates(_ uuids: [[UInt8]]) throws -> [SyncItemState?] {
        try mutex.withLock {
            try createSyncTable()
            let st = try store.db.prepare("SELECT local_version, server_version FROM sync_items WHERE uuid = ?")
            defer { st.reset() }
            var states = [SyncItemState?](repeating: nil, count: uuids.count)
            for i in uuids.indices.sorted(by: { uuids[$0].lexicographicallyPrecedes(uuids[$1]) }) {
                st.reset()
                try st.bind(.blob(uuids[i]))
                if try st.step() { states[i] = SyncItemState(localVersion: st.int(0), serverVersion: st.int(1)) }
            }
            return states
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
        try applySynced([.write(p, serverVersion: serverVersion)])[0]
    }

    /// Deletes an item another host deleted, and forgets its sync state.
    /// - Returns: what changed, or nil when there was no such item.
    public func deleteSynced(uuid: [UInt8]) throws -> SyncApplied? {
        try applySynced([.delete(uuid: uuid)])[0]
    }

    /// Applies other hosts' changes in order, in one SQLite transaction (one commit to disk for
    /// a page of the log, not one per item): all of them or, when one throws, none.
    /// - Returns: what each changed (see `applySynced` and `deleteSynced`).
    /// - Throws: as `applySynced`.
    /// - Parameter prepared: what `prepareSynced` made of `changes` (on another thread, while
    ///   an earlier batch was written), used where still valid; the rest is done here.
    public func applySynced(_ changes: [SyncChange], prepared: [PreparedSync]? = nil) throws -> [SyncApplied?] {
        precondition(prepared == nil || prepared!.count == changes.count)
        var decoded: [Attributes?] = []
        decoded.reserveCapacity(changes.count)
        for (i, c) in changes.enumerated() {
            guard case .write(let p, _) = c else { decoded.append(nil); continue }
            if let ready = prepared?[i], ready.item?.uuid == p.uuid {  // decoded and checked already
                decoded.append(ready.attributes)
                continue
            }
            let attributes = try ItemCodec.decode(p.attributes)
            try Self.checkSyncedRecord(attributes, p)
            decoded.append(attributes)
        }
        return try mutex.withLock {
            try store.db.transaction {
                try createSyncTable()
                var later = SyncedRows()
                let applied = try changes.indices.map { i in
                    switch changes[i] {
                    case .write(let p, let serverVersion):
                        return try writeSyncedLocked(p, decoded[i]!, serverVersion: serverVersion,
                                                     prepared: usablePrepared(prepared?[i], p), later: &later)
                    case .delete(let uuid):
                        try later.write(store)
                        return try deleteSyncedLocked(uuid)
                    }
                }
                try later.write(store)
                return applied
            }
        }
    }

    /// The lookup tokens and sync states of the new rows of a transaction of synced changes,
    /// written at its end in key order: the `tokens` and `sync_items` B-trees, keyed by
    /// random-looking tokens and uuids, then take a batch's inserts leaf after leaf, each page
    /// read and dirtied once, instead of in log order (at a million items, a page read from
    /// the kernel for nearly every insert). Written before any change that reads or deletes
    /// either table (an existing row, a clash, a delete), so every statement sees what it
    /// would have seen, and in the same transaction: a crash loses all of it or none.
    struct SyncedRows {
        var tokens: [(token: [UInt8], rowID: Int64)] = []
        var states: [(uuid: [UInt8], state: SyncItemState)] = []

        mutating func write(_ store: ItemStore) throws {
            if !tokens.isEmpty {
                tokens.sort { $0.token == $1.token ? $0.rowID < $1.rowID : $0.token.lexicographicallyPrecedes($1.token) }
                try store.insertTokens(tokens)
                tokens = []
            }
            if !states.isEmpty {
                states.sort { $0.uuid.lexicographicallyPrecedes($1.uuid) }
                let st = try store.db.prepare(Vault.writeSyncStateSQL)
                for (uuid, s) in states {
                    try st.bind(.blob(uuid), .integer(s.localVersion), .integer(s.serverVersion)).run()
                }
                states = []
            }
        }
    }

    private func writeSyncedLocked(_ p: SyncPayload, _ attributes: Attributes, serverVersion: Int64,
                                   prepared: PreparedSync?, later: inout SyncedRows) throws -> SyncApplied? {
        guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
        let classKey = try availableKey(for: p.protection)
        /// The item sealed as a row: made ahead (`prepareSynced`) or here.
        func sealed(rowID: Int64, version: Int64) throws -> StoredItem {
            guard var item = prepared?.item else {
                return try seal(uuid: p.uuid, rowID: rowID, itemClass: p.itemClass, protection: p.protection,
                                attributes: attributes, secret: p.secret, classKey: classKey, indexKey: indexKey,
                                version: version)
            }
            item.header.rowID = rowID
            item.header.version = version
            return item
        }
        var applied = SyncApplied(groups: [], names: [])
        let existing = try store.item(uuid: p.uuid)
        if existing != nil { try later.write(store) }  // its tokens and state are read or replaced below
        if let e = existing, let old = try? open(e, classKey: try availableKey(for: e.protection), needSecret: false) {
            note(old.attributes, e.itemClass, into: &applied)
        }
        // A change made here and not yet sent lost to one the server took first.
        if let e = existing, try hasUnsentChange(e) { try keepInHistory(e, reason: .serverOrder) }
        let pk = prepared?.item?.primaryKeyToken ?? IndexToken.primaryKey(attributes, itemClass: p.itemClass, key: indexKey)
        if let clash = try store.row(primaryKeyToken: pk), clash.uuid != p.uuid {
            try later.write(store)
            guard p.uuid.lexicographicallyPrecedes(clash.uuid) else {
                try keepInHistory(try sealed(rowID: 0, version: 0), reason: .higherUUID)
                return nil
            }
            if let old = try? open(clash, classKey: try availableKey(for: clash.protection), needSecret: false) {
                note(old.attributes, clash.itemClass, into: &applied)
            }
            try keepInHistory(clash, reason: .higherUUID)
            try store.delete(rowID: clash.rowID)
        }
        var item = try sealed(rowID: existing?.rowID ?? 0, version: (existing?.version ?? 0) + 1)
        let tokens = prepared?.tokens ?? lookupTokens(attributes, itemClass: p.itemClass, indexKey: indexKey)
        let state = SyncItemState(localVersion: item.version, serverVersion: serverVersion)
        if existing != nil {
            try store.replace(item, tokens: tokens)
            try writeSyncState(p.uuid, state)
        } else {
            item.rowID = try store.insert(item, tokens: [])
            later.tokens += tokens.map { ($0, item.rowID) }
            later.states.append((p.uuid, state))
        }
        try forgetSyncChange(p.uuid)
        note(attributes, p.itemClass, into: &applied)
        return applied
    }

    func deleteSyncedLocked(_ uuid: [UInt8]) throws -> SyncApplied? {
        let unsent = try store.item(uuid: uuid).map { try hasUnsentChange($0) } ?? false
        try store.db.prepare("DELETE FROM sync_items WHERE uuid = ?").bind(.blob(uuid)).run()
        guard let e = try store.item(uuid: uuid), e.synchronizable else { return nil }
        if unsent { try keepInHistory(e, reason: .serverOrder) }
        var applied = SyncApplied(groups: [], names: [])
        if let old = try? open(e, classKey: try availableKey(for: e.protection), needSecret: false) {
            note(old.attributes, e.itemClass, into: &applied)
        }
        try store.delete(rowID: e.rowID)
        try forgetSyncChange(uuid)
        return applied
    }

    /// An item just written (or deleted) as the server has it is in step: its `sync_dirty`
    /// row, which the write's trigger added, goes now rather than in the next round's
    /// `pruneSyncChanges`, which would find it in step and remove it (after a new host's first
    /// sync, a scan of every item it received).
    private func forgetSyncChange(_ uuid: [UInt8]) throws {
        try store.db.prepare("DELETE FROM sync_dirty WHERE uuid = ?").bind(.blob(uuid)).run()
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

    /// Records (or, with nil, forgets) what was exchanged for many items, in one transaction.
    public func setSyncStates(_ states: [(uuid: [UInt8], state: SyncItemState?)]) throws {
        try mutex.withLock {
            try store.db.transaction {
                try createSyncTable()
                for (uuid, state) in states {
                    if let state {
                        try writeSyncState(uuid, state)
                    } else {
                        try store.db.prepare("DELETE FROM sync_items WHERE uuid = ?").bind(.blob(uuid)).run()
                    }
                }
            }
        }
    }

    /// Forgets all sync state (leaving a circle).
    public func clearSyncStates() throws {
        try mutex.withLock {
            try createSyncTable()
            try store.db.execute("""
                DELETE FROM sync_items; DROP TRIGGER sync_dirty_insert; DROP TRIGGER sync_dirty_update;
                DROP TRIGGER sync_dirty_delete; DROP TABLE sync_dirty
                """)
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

    func createSyncTable() throws {
        try store.db.execute("""
            CREATE TABLE IF NOT EXISTS sync_items(uuid BLOB PRIMARY KEY, local_version INTEGER NOT NULL,
                                                  server_version INTEGER NOT NULL) WITHOUT ROWID
            """)
        guard try store.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sync_dirty'") == 0
        else { return }
        // The items a round must look at: every synchronizable item written or deleted since,
        // kept by triggers in the transaction of the change, whoever makes it. Made on first
        // use with every synchronizable and every exchanged item in it.
        try store.db.execute("""
            CREATE TABLE sync_dirty(uuid BLOB PRIMARY KEY) WITHOUT ROWID;
            CREATE TRIGGER sync_dirty_insert AFTER INSERT ON items WHEN NEW.sync = 1
                BEGIN INSERT OR IGNORE INTO sync_dirty VALUES(NEW.uuid); END;
            CREATE TRIGGER sync_dirty_update AFTER UPDATE ON items WHEN NEW.sync = 1 OR OLD.sync = 1
                BEGIN INSERT OR IGNORE INTO sync_dirty VALUES(NEW.uuid); INSERT OR IGNORE INTO sync_dirty VALUES(OLD.uuid); END;
            CREATE TRIGGER sync_dirty_delete AFTER DELETE ON items WHEN OLD.sync = 1
                BEGIN INSERT OR IGNORE INTO sync_dirty VALUES(OLD.uuid); END;
            INSERT OR IGNORE INTO sync_dirty SELECT uuid FROM items WHERE sync = 1;
            INSERT OR IGNORE INTO sync_dirty SELECT uuid FROM sync_items;
            """)
    }

    /// `items` rows (alias `i`) that a round must send: synchronizable, of a class that may
    /// leave, changed since last exchanged (`s` the sync state) or never exchanged.
    private static var unsentCondition: String {
        let classes = exportableClasses.map { String($0.code) }.joined(separator: ",")
        return "i.sync = 1 AND i.pdmn IN (\(classes)) AND (s.uuid IS NULL OR s.local_version != i.version)"
    }

    /// Exchanged items (`s`) that are gone or no longer synchronizable.
    private static var goneCondition: String {
        let classes = exportableClasses.map { String($0.code) }.joined(separator: ",")
        return "NOT EXISTS (SELECT 1 FROM items i WHERE i.uuid = s.uuid AND i.sync = 1 AND i.pdmn IN (\(classes)))"
    }

    /// Whether an item was changed here since it was last exchanged (or never was).
    func hasUnsentChange(_ item: StoredItem) throws -> Bool {
        let st = try store.db.prepare("SELECT local_version FROM sync_items WHERE uuid = ?")
        defer { st.reset() }
        try st.bind(.blob(item.uuid))
        return try !st.step() || st.int(0) != item.version
    }

    static let writeSyncStateSQL = "INSERT OR REPLACE INTO sync_items(uuid, local_version, server_version) VALUES(?, ?, ?)"

    private func writeSyncState(_ uuid: [UInt8], _ s: SyncItemState) throws {
        try store.db.prepare(Self.writeSyncStateSQL)
            .bind(.blob(uuid), .integer(s.localVersion), .integer(s.serverVersion)).run()
    }

    func note(_ a: Attributes, _ itemClass: ItemClass, into applied: inout SyncApplied) {
        if case .string(let g)? = a[.accessGroup], !applied.groups.contains(g) { applied.groups.append(g) }
        guard itemClass == .genericPassword, let s = a[.service]?.byteView else { return }
        applied.names.append((s, a[.account]?.byteView))
    }

    /// A synced record must look like what the vault itself stores: known attributes, its
    /// class's protection, a group, `sync` 1, never a ThisDeviceOnly class.
    static func checkSyncedRecord(_ a: Attributes, _ p: SyncPayload) throws {
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
