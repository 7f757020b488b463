import SQLiteStore

/// One stored item row: clear columns used for filtering, and the sealed blobs.
struct StoredItem {
    var rowID: Int64
    var uuid: [UInt8]
    var itemClass: ItemClass
    var protection: ProtectionClass
    var synchronizable: Bool
    var groupToken: [UInt8]
    var primaryKeyToken: [UInt8]
    var wrappedKey: [UInt8]
    var attributes: [UInt8]
    var secret: [UInt8]
    var version: Int64
}

/// The SQLite side of the vault: schema, migrations and row access. Knows nothing of keys;
/// everything it stores is already sealed or a blind token.
final class ItemStore {
    /// The schema version (`PRAGMA user_version`) this build writes.
    static let schemaVersion: Int64 = 2
    let db: Connection
    /// Version 2: every generic password has its Secret Service pair tokens (version 1 gains
    /// them in one step, `markSecretAttributeTokens`).
    var hasSecretAttributeTokens = true
    /// Item rows inserted, rewritten or deleted through this store since it was opened, whether
    /// or not their transaction committed: while it stays, every row reads as it did
    /// (`Vault.checkOpened`). Changed with the vault's mutex held, as every write is.
    private(set) var rowWrites: UInt64 = 0

    init(db: Connection) { self.db = db }

    /// Durability and no-plaintext settings, applied on every open.
    func configure() throws {
        guard try db.scalarText("PRAGMA journal_mode=WAL") == "wal" else {
            throw SQLiteError(code: 1, message: "cannot enable WAL")
        }
        // FULL: a commit is on disk before it is acknowledged, in WAL mode too.
        try db.execute("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA secure_delete=ON; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-8192")
    }

    /// Creates the tables of schema version 2 (version 1's, with pair tokens in `tokens`).
    func createSchema() throws {
        try db.execute("""
            CREATE TABLE meta(key TEXT PRIMARY KEY, value BLOB NOT NULL);
            CREATE TABLE items(
                rowid INTEGER PRIMARY KEY AUTOINCREMENT,
                uuid BLOB NOT NULL UNIQUE,
                cls INTEGER NOT NULL,
                pdmn INTEGER NOT NULL,
                sync INTEGER NOT NULL,
                agrp_token BLOB NOT NULL,
                pk_token BLOB NOT NULL UNIQUE,
                wrapped_key BLOB NOT NULL,
                attrs BLOB NOT NULL,
                data BLOB NOT NULL,
                version INTEGER NOT NULL);
            CREATE INDEX items_by_group ON items(cls, agrp_token);
            CREATE TABLE tokens(
                token BLOB NOT NULL,
                item INTEGER NOT NULL REFERENCES items(rowid) ON DELETE CASCADE,
                PRIMARY KEY(token, item)) WITHOUT ROWID;
            CREATE INDEX tokens_by_item ON tokens(item);
            PRAGMA user_version = 2;
            """)
    }

    /// Brings an older schema up to date. Version 1 lacks pair tokens: the vault adds them later (`Vault+SecretTokens.swift`).
    func migrate() throws {
        let version = try db.scalarInt("PRAGMA user_version") ?? 0
        guard version <= ItemStore.schemaVersion else {
            throw VaultFileError.newerFormat(found: Int(version), supported: Int(ItemStore.schemaVersion))
        }
        guard version >= 1 else { throw VaultFileError.corruptHeader }
        hasSecretAttributeTokens = version >= 2
    }

    /// Records that every generic password now has its pair tokens (schema version 2), inside
    /// the transaction that added them.
    func markSecretAttributeTokens() throws { try db.execute("PRAGMA user_version = 2") }

    /// Adds tokens to a row, keeping the ones it has.
    func addTokens(_ tokens: [[UInt8]], rowID: Int64) throws { try insertTokens(tokens, rowID: rowID) }

    func readMeta(_ key: String) throws -> [UInt8]? {
        let st = try db.prepare("SELECT value FROM meta WHERE key = ?")
        defer { st.reset() }
        try st.bind(.text(key))
        return try st.step() ? st.blob(0) : nil
    }

    func writeMeta(_ key: String, _ value: [UInt8]) throws {
        try db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)").bind(.text(key), .blob(value)).run()
    }

    static let columns = "rowid, uuid, cls, pdmn, sync, agrp_token, pk_token, wrapped_key, attrs, data, version"
    private static let qualifiedColumns = columns.split(separator: ",").map { "items." + $0.trimmingCharacters(in: " ") }
        .joined(separator: ", ")

    /// One `items` row, selected with `columns` in that order.
    func row(_ st: Statement) throws -> StoredItem {
        guard let cls = ItemClass(code: UInt8(clamping: st.int(2))),
              let pdmn = ProtectionClass(code: UInt8(clamping: st.int(3)))
        else { throw KeychainStatus.decode }
        return StoredItem(rowID: st.int(0), uuid: st.blob(1) ?? [], itemClass: cls, protection: pdmn,
                          synchronizable: st.int(4) != 0, groupToken: st.blob(5) ?? [],
                          primaryKeyToken: st.blob(6) ?? [], wrappedKey: st.blob(7) ?? [],
                          attributes: st.blob(8) ?? [], secret: st.blob(9) ?? [], version: st.int(10))
    }

    /// Candidate rows in insertion order: one class, some access groups, optional
    /// synchronizable and protection filters, every given token, an optional item id.
    func candidates(itemClass: ItemClass, groupTokens: [[UInt8]], synchronizable: Bool?,
                    protection: ProtectionClass?, tokens: [[UInt8]], uuid: [UInt8]?,
                    visit: (StoredItem) throws -> Bool) throws {
        guard !groupTokens.isEmpty else { return }
        // With tokens, the search starts from the first one's index entries (the most selective:
        // the account for passwords) and checks the others per row, so a lookup costs the same
        // whatever the size of the service. `IN (subquery)` would build each token's whole list.
        let columns = ItemStore.qualifiedColumns
        var sql: String
        var args: [SQLiteValue] = []
        if let first = tokens.first {
            // CROSS JOIN keeps the token as the outer loop: SQLite would otherwise scan the group index.
            sql = "SELECT \(columns) FROM tokens AS t0 CROSS JOIN items ON items.rowid = t0.item WHERE t0.token = ? AND items.cls = ?"
            args = [.blob(first)]
        } else {
            sql = "SELECT \(columns) FROM items WHERE items.cls = ?"
        }
        args.append(.integer(Int64(itemClass.code)))
        sql += " AND items.agrp_token IN (" + Array(repeating: "?", count: groupTokens.count).joined(separator: ",") + ")"
        args += groupTokens.map { .blob($0) }
        if let synchronizable { sql += " AND items.sync = ?"; args.append(.integer(synchronizable ? 1 : 0)) }
        if let protection { sql += " AND items.pdmn = ?"; args.append(.integer(Int64(protection.code))) }
        if let uuid { sql += " AND items.uuid = ?"; args.append(.blob(uuid)) }
        for t in tokens.dropFirst() {
            sql += " AND EXISTS (SELECT 1 FROM tokens AS tk WHERE tk.token = ? AND tk.item = items.rowid)"
            args.append(.blob(t))
        }
        // Insertion order. From a token, t0.item is that order already (the index is (token, item)).
        sql += tokens.isEmpty ? " ORDER BY items.rowid" : " ORDER BY t0.item"
        let st = try db.prepare(sql)
        defer { st.reset() }
        try st.bind(args)
        while try st.step() {
            guard try visit(try row(st)) else { break }
        }
    }

    /// The row of one item by its id, whatever its class and group: a point lookup.
    func item(uuid: [UInt8]) throws -> StoredItem? {
        let st = try db.prepare("SELECT \(ItemStore.columns) FROM items WHERE uuid = ?")
        defer { st.reset() }
        try st.bind(.blob(uuid))
        return try st.step() ? try row(st) : nil
    }

    /// Inserts an item and its lookup tokens. - Throws: `duplicateItem` on a primary-key clash.
    func insert(_ item: StoredItem, tokens: [[UInt8]]) throws -> Int64 {
        rowWrites &+= 1
        do {
            try db.prepare("""
                INSERT INTO items(uuid, cls, pdmn, sync, agrp_token, pk_token, wrapped_key, attrs, data, version)
                VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).bind(.blob(item.uuid), .integer(Int64(item.itemClass.code)), .integer(Int64(item.protection.code)),
                          .integer(item.synchronizable ? 1 : 0), .blob(item.groupToken), .blob(item.primaryKeyToken),
                          .blob(item.wrappedKey), .blob(item.attributes), .blob(item.secret), .integer(item.version)).run()
        } catch let e as SQLiteError where e.isConstraintViolation {
            throw KeychainStatus.duplicateItem
        }
        let rowID = db.lastInsertRowID
        try insertTokens(tokens, rowID: rowID)
        return rowID
    }

    private func insertTokens(_ tokens: [[UInt8]], rowID: Int64) throws {
        let st = try db.prepare("INSERT OR IGNORE INTO tokens(token, item) VALUES(?, ?)")
        for t in tokens { try st.bind(.blob(t), .integer(rowID)).run() }
    }

    /// Rewrites an item in place (same row, so insertion order is kept) with new tokens.
    func replace(_ item: StoredItem, tokens: [[UInt8]]) throws {
        rowWrites &+= 1
        do {
            try db.prepare("""
                UPDATE items SET uuid = ?, pdmn = ?, sync = ?, agrp_token = ?, pk_token = ?, wrapped_key = ?,
                attrs = ?, data = ?, version = ? WHERE rowid = ?
                """).bind(.blob(item.uuid), .integer(Int64(item.protection.code)), .integer(item.synchronizable ? 1 : 0),
                          .blob(item.groupToken), .blob(item.primaryKeyToken), .blob(item.wrappedKey),
                          .blob(item.attributes), .blob(item.secret), .integer(item.version), .integer(item.rowID)).run()
        } catch let e as SQLiteError where e.isConstraintViolation {
            throw KeychainStatus.duplicateItem
        }
        try db.prepare("DELETE FROM tokens WHERE item = ?").bind(.integer(item.rowID)).run()
        try insertTokens(tokens, rowID: item.rowID)
    }

    func delete(rowID: Int64) throws {
        rowWrites &+= 1
        try db.prepare("DELETE FROM items WHERE rowid = ?").bind(.integer(rowID)).run()
    }

    /// The lookup tokens stored for one row.
    func tokens(of rowID: Int64) throws -> Set<[UInt8]> {
        let st = try db.prepare("SELECT token FROM tokens WHERE item = ?")
        defer { st.reset() }
        try st.bind(.integer(rowID))
        var out = Set<[UInt8]>()
        while try st.step() { if let t = st.blob(0) { out.insert(t) } }
        return out
    }

    /// Deletes every item of one protection class (used when a passphrase is removed).
    func deleteAll(protection: ProtectionClass) throws -> Int {
        rowWrites &+= 1
        try db.prepare("DELETE FROM items WHERE pdmn = ?").bind(.integer(Int64(protection.code))).run()
        return db.changes
    }

    /// Item counts per protection class, from clear columns only.
    /// One scan with a sum per class: a GROUP BY would sort the whole table into a temporary
    /// B-tree, which `temp_store=MEMORY` keeps on the heap (about 50 bytes per item).
    func countsByProtection() throws -> [ProtectionClass: Int] {
        let classes = ProtectionClass.allCases
        let st = try db.prepare("SELECT " + classes.map { "sum(pdmn = \($0.code))" }.joined(separator: ", ") + " FROM items")
        defer { st.reset() }
        var out: [ProtectionClass: Int] = [:]
        if try st.step() {
            for (i, p) in classes.enumerated() where st.int(Int32(i)) > 0 { out[p] = Int(st.int(Int32(i))) }
        }
        return out
    }
}

private extension Substring {
    func trimmingCharacters(in set: String) -> String {
        String(drop(while: { set.contains($0) }).reversed().drop(while: { set.contains($0) }).reversed())
    }
}
