import SQLiteStore
import Synchronization

/// The clear columns of a row that a search keeps for its caller: no sealed blob.
struct ItemHeader {
    var rowID: Int64
    var uuid: [UInt8]
    var itemClass: ItemClass
    var protection: ProtectionClass
    var synchronizable: Bool
    var version: Int64
}

/// One stored item row: clear columns used for filtering, and the sealed blobs.
struct StoredItem {
    var header: ItemHeader
    var groupToken: [UInt8]
    var primaryKeyToken: [UInt8]
    var wrappedKey: [UInt8]
    var attributes: [UInt8]
    var secret: [UInt8]

    init(rowID: Int64, uuid: [UInt8], itemClass: ItemClass, protection: ProtectionClass, synchronizable: Bool,
         groupToken: [UInt8], primaryKeyToken: [UInt8], wrappedKey: [UInt8], attributes: [UInt8], secret: [UInt8],
         version: Int64) {
        header = ItemHeader(rowID: rowID, uuid: uuid, itemClass: itemClass, protection: protection,
                            synchronizable: synchronizable, version: version)
        self.groupToken = groupToken
        self.primaryKeyToken = primaryKeyToken
        self.wrappedKey = wrappedKey
        self.attributes = attributes
        self.secret = secret
    }

    var rowID: Int64 { get { header.rowID } set { header.rowID = newValue } }
    var uuid: [UInt8] { header.uuid }
    var itemClass: ItemClass { header.itemClass }
    var protection: ProtectionClass { header.protection }
    var synchronizable: Bool { header.synchronizable }
    var version: Int64 { header.version }
}

/// The row a statement stands on, read in place: its blobs are SQLite's bytes, valid only until
/// the statement steps or resets, so a visitor opens them at once or copies the row (`stored()`).
struct ItemRow {
    let header: ItemHeader
    fileprivate let statement: Statement

    /// The sealed parts as SQLite holds them, for `body` only.
    func withSealedParts<R>(_ body: (SealedParts) throws -> R) rethrows -> R {
        try statement.withBlob(5) { groupToken in
            try statement.withBlob(7) { wrappedKey in
                try statement.withBlob(8) { attributes in
                    try statement.withBlob(9) { secret in
                        try body(SealedParts(header: header, groupToken: groupToken, wrappedKey: wrappedKey,
                                             attributes: attributes, secret: secret))
                    }
                }
            }
        }
    }

    /// True when the row's `agrp_token` is `token`.
    func groupTokenEquals(_ token: [UInt8]) -> Bool {
        statement.withBlob(5) { blob in token.withUnsafeBytes { sameBytes(blob, $0) } }
    }

    /// A copy of the whole row, which outlives the statement.
    func stored() -> StoredItem {
        let st = statement
        return StoredItem(rowID: header.rowID, uuid: header.uuid, itemClass: header.itemClass, protection: header.protection,
                          synchronizable: header.synchronizable, groupToken: st.blob(5) ?? [], primaryKeyToken: st.blob(6) ?? [],
                          wrappedKey: st.blob(7) ?? [], attributes: st.blob(8) ?? [], secret: st.blob(9) ?? [],
                          version: header.version)
    }

    /// A copy of what opens the row's secret (`Vault.openFileSecret`): the clear columns, the
    /// wrapped item key and the sealed secret. The tokens and the sealed attributes, which a
    /// file's entry has opened already, are left empty.
    func storedForSecret() -> StoredItem {
        let st = statement
        return StoredItem(rowID: header.rowID, uuid: header.uuid, itemClass: header.itemClass, protection: header.protection,
                          synchronizable: header.synchronizable, groupToken: [], primaryKeyToken: [],
                          wrappedKey: st.blob(7) ?? [], attributes: [], secret: st.blob(9) ?? [], version: header.version)
    }
}

/// The sealed blobs of one row and its clear columns, wherever the bytes are (a statement's
/// columns, a `StoredItem`'s arrays): what `Vault.open` decrypts.
struct SealedParts {
    var header: ItemHeader
    var groupToken: UnsafeRawBufferPointer
    var wrappedKey: UnsafeRawBufferPointer
    var attributes: UnsafeRawBufferPointer
    var secret: UnsafeRawBufferPointer
}

extension StoredItem {
    func withSealedParts<R>(_ body: (SealedParts) throws -> R) rethrows -> R {
        try groupToken.withUnsafeBytes { groupToken in
            try wrappedKey.withUnsafeBytes { wrappedKey in
                try attributes.withUnsafeBytes { attributes in
                    try secret.withUnsafeBytes { secret in
                        try body(SealedParts(header: header, groupToken: groupToken, wrappedKey: wrappedKey,
                                             attributes: attributes, secret: secret))
                    }
                }
            }
        }
    }
}

/// The SQLite side of the vault: schema, migrations and row access. Knows nothing of keys;
/// everything it stores is already sealed or a blind token.
final class ItemStore {
    /// The schema version (`PRAGMA user_version`) this build writes.
    static let schemaVersion: Int64 = 2
    let db: Connection
    /// Shared by the vault's write connection and its readers.
    let schema: SchemaState
    /// Version 2: every generic password has its Secret Service pair tokens (version 1 gains
    /// them in one step, `markSecretAttributeTokens`).
    var hasSecretAttributeTokens: Bool {
        get { schema.hasSecretAttributeTokens }
        set { schema.hasSecretAttributeTokens = newValue }
    }
    /// The search statements of this connection, one per shape (`candidates`). One thread at a
    /// time uses a connection (see `SearchContext`), so Swift's run-time exclusivity check is
    /// left out on this path.
    @exclusivity(unchecked) private var candidateStatements: [CandidateShape: Statement] = [:]
    /// Item rows inserted, rewritten or deleted through this store since it was opened, whether
    /// or not their transaction committed: while it stays, every row reads as it did
    /// (`Vault.checkOpened`). Written with the vault's mutex held, as every write is; read by
    /// any reader.
    let rowWrites = Atomic<UInt64>(0)

    init(db: Connection, schema: SchemaState = SchemaState()) {
        self.db = db
        self.schema = schema
    }

    /// The page cache of every connection, in KiB (`PRAGMA cache_size`); a long read of the
    /// sync log takes more for its duration (`Vault.withLargeWriteCache`).
    static let cacheKiB = 8192

    /// The page cache a long scan keeps past its first `longScanRows` rows, in KiB
    /// (`boundCacheForScan`): a listing of a large directory reads each of its pages once.
    static let scanCacheKiB = 1024
    static let longScanRows = 4096

    /// Bounds the page cache at `scanCacheKiB` for the rest of a long scan, which would
    /// otherwise fill all `cacheKiB` with pages no lookup needs soon and hold them until the
    /// connection is next shrunk (the memory of `ls -l` of 100,000 names). Its pages past the
    /// bound are freed now. Returns the cache size to give back (`PRAGMA cache_size`), or nil
    /// when it was already as small.
    func boundCacheForScan() -> Int64? {
        guard let before = try? db.scalarInt("PRAGMA cache_size"),
              before > 0 || -before > Int64(Self.scanCacheKiB) else { return nil }
        try? db.execute("PRAGMA cache_size=-\(Self.scanCacheKiB)")
        return before
    }

    /// Gives back the cache size `boundCacheForScan` returned.
    func restoreCache(_ size: Int64) {
        try? db.execute("PRAGMA cache_size=\(size)")
    }

    /// Durability and no-plaintext settings, applied on every open.
    func configure() throws {
        guard try db.scalarText("PRAGMA journal_mode=WAL") == "wal" else {
            throw SQLiteError(code: 1, message: "cannot enable WAL")
        }
        // FULL: a commit is on disk before it is acknowledged, in WAL mode too.
        try db.execute("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA secure_delete=ON; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-\(Self.cacheKiB)")
    }

    /// Settings of a read-only connection (`ReaderPool`): its own page cache, as large as the
    /// writer's (a 10,000-item vault fits; up to 8 readers at 8 MiB each bound the daemon's
    /// share), and sorts in memory, as on the write connection.
    func configureReader() throws {
        try db.execute("PRAGMA temp_store=MEMORY; PRAGMA cache_size=-\(Self.cacheKiB)")
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
    func row(_ st: Statement) throws -> StoredItem { try ItemStore.itemRow(st).stored() }

    /// The row `st` stands on, selected with `columns` in that order, read in place.
    private static func itemRow(_ st: Statement) throws -> ItemRow {
        guard let cls = ItemClass(code: UInt8(clamping: st.int(2))),
              let pdmn = ProtectionClass(code: UInt8(clamping: st.int(3)))
        else { throw KeychainStatus.decode }
        let header = ItemHeader(rowID: st.int(0), uuid: st.blob(1) ?? [], itemClass: cls, protection: pdmn,
                                synchronizable: st.int(4) != 0, version: st.int(10))
        return ItemRow(header: header, statement: st)
    }

    /// The row whose primary-key token is `token`, if any: a point lookup in the unique
    /// `pk_token` index, for a search that names its class's whole primary key. The caller
    /// checks the clear columns it filters by.
    func candidate(primaryKeyToken token: UnsafeRawBufferPointer, visit: (ItemRow) throws -> Void) throws {
        let st = try db.prepare(ItemStore.byPrimaryKey)
        defer { st.reset() }
        try st.bind(blob: token, at: 1)
        if try st.step() { try visit(try ItemStore.itemRow(st)) }
    }

    /// `columns` without `pk_token`, which the caller has (NULL keeps the others' places).
    private static let byPrimaryKey = StaticSQL(
        "SELECT rowid, uuid, cls, pdmn, sync, agrp_token, NULL, wrapped_key, attrs, data, version FROM items WHERE pk_token = ?")

    /// Candidate rows in insertion order: one class, some access groups, optional
    /// synchronizable and protection filters, every given token, an optional item id. Each row
    /// is visited in place (`ItemRow`); `visit` returns false to stop.
    func candidates(itemClass: ItemClass, groupTokens: [[UInt8]], synchronizable: Bool?,
                    protection: ProtectionClass?, tokens: [[UInt8]], uuid: [UInt8]?,
                    visit: (ItemRow) throws -> Bool) throws {
        guard !groupTokens.isEmpty else { return }
        let shape = CandidateShape(groups: groupTokens.count, tokens: tokens.count, uuid: uuid != nil)
        let st = try candidateStatement(shape)
        defer { st.reset() }
        // The parameters in `CandidateShape.sql`'s order.
        var index: Int32 = 1
        func next() -> Int32 { defer { index += 1 }; return index }
        if let first = tokens.first { try st.bind(blob: first, at: next()) }
        try st.bind(integer: Int64(itemClass.code), at: next())
        for g in groupTokens { try st.bind(blob: g, at: next()) }
        if let synchronizable { try st.bind(integer: synchronizable ? 1 : 0, at: next()) } else { try st.bindNull(at: next()) }
        if let protection { try st.bind(integer: Int64(protection.code), at: next()) } else { try st.bindNull(at: next()) }
        if let uuid { try st.bind(blob: uuid, at: next()) }
        for t in tokens.dropFirst() { try st.bind(blob: t, at: next()) }
        while try st.step() {
            guard try visit(try ItemStore.itemRow(st)) else { break }
        }
    }

    private func candidateStatement(_ shape: CandidateShape) throws -> Statement {
        if let st = candidateStatements[shape] {
            st.resetIfBusy()
            return st
        }
        let st = try db.makeStatement(shape.sql)
        candidateStatements[shape] = st
        return st
    }

    /// What the text of a candidate search depends on; the values are bound.
    private struct CandidateShape: Hashable {
        var groups: Int
        var tokens: Int
        var uuid: Bool

        /// With tokens, the search starts from the first one's index entries (the most selective:
        /// the account for passwords) and checks the others per row, so a lookup costs the same
        /// whatever the size of the service. `IN (subquery)` would build each token's whole list.
        /// Parameters are numbered in the order `candidates` binds them. `sync` and `pdmn` have no
        /// index, so "NULL or equal" costs nothing; the item id does (its unique index), so it
        /// has its own shape.
        var sql: String {
            var n = 0
            func p() -> String { n += 1; return "?\(n)" }
            var sql: String
            if tokens > 0 {
                // CROSS JOIN keeps the token as the outer loop: SQLite would otherwise scan the group index.
                sql = "SELECT \(ItemStore.qualifiedColumns) FROM tokens AS t0 CROSS JOIN items ON items.rowid = t0.item WHERE t0.token = \(p()) AND items.cls = \(p())"
            } else {
                sql = "SELECT \(ItemStore.qualifiedColumns) FROM items WHERE items.cls = \(p())"
            }
            sql += " AND items.agrp_token IN (" + (0..<groups).map { _ in p() }.joined(separator: ",") + ")"
            let sync = p(), pdmn = p()
            sql += " AND (\(sync) IS NULL OR items.sync = \(sync)) AND (\(pdmn) IS NULL OR items.pdmn = \(pdmn))"
            if uuid { sql += " AND items.uuid = \(p())" }
            for _ in 1..<max(tokens, 1) {
                sql += " AND EXISTS (SELECT 1 FROM tokens AS tk WHERE tk.token = \(p()) AND tk.item = items.rowid)"
            }
            // Insertion order. From a token, t0.item is that order already (the index is (token, item)).
            sql += tokens == 0 ? " ORDER BY items.rowid" : " ORDER BY t0.item"
            return sql
        }
    }

    /// The row of one item by its id, whatever its class and group: a point lookup.
    func item(uuid: [UInt8]) throws -> StoredItem? {
        let st = try db.prepare(ItemStore.byUUID)
        defer { st.reset() }
        try st.bind(.blob(uuid))
        return try st.step() ? try row(st) : nil
    }

    private static let byUUID = StaticSQL("SELECT \(columns) FROM items WHERE uuid = ?")

    /// Inserts an item and its lookup tokens. - Throws: `duplicateItem` on a primary-key clash.
    func insert(_ item: StoredItem, tokens: [[UInt8]]) throws -> Int64 {
        rowWrites.add(1, ordering: .releasing)
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

    /// Adds the tokens of many rows (each row's own kept), in the order given.
    func insertTokens(_ tokens: [(token: [UInt8], rowID: Int64)]) throws {
        let st = try db.prepare("INSERT OR IGNORE INTO tokens(token, item) VALUES(?, ?)")
        for (t, rowID) in tokens { try st.bind(.blob(t), .integer(rowID)).run() }
    }

    /// Rewrites an item in place (same row, so insertion order is kept) with new tokens.
    func replace(_ item: StoredItem, tokens: [[UInt8]]) throws {
        rowWrites.add(1, ordering: .releasing)
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
        rowWrites.add(1, ordering: .releasing)
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
        rowWrites.add(1, ordering: .releasing)
        try db.prepare("DELETE FROM items WHERE pdmn = ?").bind(.integer(Int64(protection.code))).run()
        return db.changes
    }

    /// Item counts per protection class, from clear columns only.
    /// One scan with a sum per class: a GROUP BY would sort the whole table into a temporary
    /// B-tree, which `temp_store=MEMORY` keeps on the heap (about 50 bytes per item).
    /// Items by protection class: all of them, or (`groupTokens`) those of these access groups.
    func countsByProtection(groupTokens: [[UInt8]]? = nil) throws -> [ProtectionClass: Int] {
        let classes = ProtectionClass.allCases
        var sql = "SELECT " + classes.map { "sum(pdmn = \($0.code))" }.joined(separator: ", ") + " FROM items"
        if let groupTokens {
            guard !groupTokens.isEmpty else { return [:] }
            sql += " WHERE agrp_token IN (" + groupTokens.indices.map { "?\($0 + 1)" }.joined(separator: ",") + ")"
        }
        let st = try db.prepare(sql)
        defer { st.reset() }
        for (i, token) in (groupTokens ?? []).enumerated() { try st.bind(blob: token, at: Int32(i + 1)) }
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
