import SQLiteStore

/// The row access backups need: every row of some protection classes, and one row by its
/// primary-key token. Like the rest of the store, nothing here decrypts.
extension ItemStore {
    /// Rows of the given protection classes (optionally only `sync=1`), in insertion order.
    func rows(protections: [ProtectionClass], synchronizableOnly: Bool, visit: (StoredItem) throws -> Void) throws {
        guard !protections.isEmpty else { return }
        var sql = "SELECT \(ItemStore.columns) FROM items WHERE pdmn IN ("
        sql += protections.map { String($0.code) }.joined(separator: ",") + ")"
        if synchronizableOnly { sql += " AND sync = 1" }
        sql += " ORDER BY rowid"
        let st = try db.prepare(sql)
        defer { st.reset() }
        while try st.step() { try visit(try row(st)) }
    }

    /// The row whose primary-key token is `token`, if any.
    func row(primaryKeyToken token: [UInt8]) throws -> StoredItem? {
        let st = try db.prepare("SELECT \(ItemStore.columns) FROM items WHERE pk_token = ?")
        defer { st.reset() }
        try st.bind(.blob(token))
        return try st.step() ? try row(st) : nil
    }
}
