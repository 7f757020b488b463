import SQLiteStore

/// The row access backups need: every row of some protection classes, and one row by its
/// primary-key token. Like the rest of the store, nothing here decrypts.
extension ItemStore {
    private static let backupColumns = "rowid, uuid, cls, pdmn, sync, agrp_token, pk_token, wrapped_key, attrs, data, version"

    /// Rows of the given protection classes (optionally only `sync=1`), in insertion order.
    func rows(protections: [ProtectionClass], synchronizableOnly: Bool, visit: (StoredItem) throws -> Void) throws {
        guard !protections.isEmpty else { return }
        var sql = "SELECT \(Self.backupColumns) FROM items WHERE pdmn IN ("
        sql += protections.map { String($0.code) }.joined(separator: ",") + ")"
        if synchronizableOnly { sql += " AND sync = 1" }
        sql += " ORDER BY rowid"
        let st = try db.prepare(sql)
        defer { st.reset() }
        while try st.step() { try visit(try backupRow(st)) }
    }

    /// The row whose primary-key token is `token`, if any.
    func row(primaryKeyToken token: [UInt8]) throws -> StoredItem? {
        let st = try db.prepare("SELECT \(Self.backupColumns) FROM items WHERE pk_token = ?")
        defer { st.reset() }
        try st.bind(.blob(token))
        return try st.step() ? try backupRow(st) : nil
    }

    private func backupRow(_ st: Statement) throws -> StoredItem {
        guard let cls = ItemClass(code: UInt8(clamping: st.int(2))),
              let pdmn = ProtectionClass(code: UInt8(clamping: st.int(3)))
        else { throw KeychainStatus.decode }
        return StoredItem(rowID: st.int(0), uuid: st.blob(1) ?? [], itemClass: cls, protection: pdmn,
                          synchronizable: st.int(4) != 0, groupToken: st.blob(5) ?? [],
                          primaryKeyToken: st.blob(6) ?? [], wrappedKey: st.blob(7) ?? [],
                          attributes: st.blob(8) ?? [], secret: st.blob(9) ?? [], version: st.int(10))
    }
}
