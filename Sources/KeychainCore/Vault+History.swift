import KeychainCrypto
import SQLiteStore

/// Why a version of an item was set aside by fleet sync (docs/sync.md, "Conflicts").
public enum HistoryReason: Int64, Sendable {
    /// Two items with one primary key: the one with the higher uuid lost to the lower.
    case higherUUID = 1
    /// A change made here lost to one another host wrote to the server first.
    case serverOrder = 2
    /// A full resync found the item gone from the pruned log while it had a change made here:
    /// the item stays and is sent again; this copy records the delete it outlived.
    case missedDelete = 3

    public var name: String {
        switch self {
        case .higherUUID: return "higher-uuid"
        case .serverOrder: return "server-order"
        case .missedDelete: return "missed-delete"
        }
    }
}

/// One version kept in an item's history: what it was, why it lost, when.
public struct HistoryEntry: Sendable {
    /// Its number in the history, what `restore` takes (`keychainfs history --restore ID`).
    public var id: Int64
    /// Unix seconds when it was set aside.
    public var at: Double
    public var reason: HistoryReason
    public var itemClass: ItemClass
    /// The losing item's attributes (store-private keys removed).
    public var attributes: Attributes
    /// Its secret; nil unless asked for.
    public var secret: SecureBytes?
}

/// The per-item history of fleet sync's conflicts: a version that loses is never dropped,
/// it is kept here with its sealed parts as they were (or, for a version that arrived and lost,
/// sealed here like an item of its uuid), in the `item_history` table, created on first use.
extension Vault {
    /// The kept versions whose `svce` and `acct` are these (each when given), newest first.
    /// Versions whose class key is locked are left out. - Throws: `interactionNotAllowed`.
    public func history(service: [UInt8]?, account: [UInt8]?, secrets: Bool) throws -> [HistoryEntry] {
        try mutex.withLock {
            try createHistoryTable()
            let st = try store.db.prepare("""
                SELECT at, reason, item, cls, pdmn, wrapped_key, attrs, data, id FROM item_history ORDER BY id DESC
                """)
            defer { st.reset() }
            var out: [HistoryEntry] = []
            while try st.step() {
                guard let cls = ItemClass(code: UInt8(clamping: st.int(3))), let pdmn = ProtectionClass(code: UInt8(clamping: st.int(4))),
                      let reason = HistoryReason(rawValue: st.int(1)) else { continue }
                let row = StoredItem(rowID: 0, uuid: st.blob(2) ?? [], itemClass: cls, protection: pdmn, synchronizable: true,
                                     groupToken: [], primaryKeyToken: [], wrappedKey: st.blob(5) ?? [],
                                     attributes: st.blob(6) ?? [], secret: st.blob(7) ?? [], version: 0)
                guard let key = try? availableKey(for: pdmn) else { continue }
                // A damaged version is left out, as a damaged item is from a search.
                guard let (attributes, secret) = try? openKept(row, classKey: key, needSecret: secrets) else { continue }
                if let service, attributes[.service]?.byteView != service { secret?.wipe(); continue }
                if let account, attributes[.account]?.byteView != account { secret?.wipe(); continue }
                out.append(HistoryEntry(id: st.int(8), at: Double(st.int(0)), reason: reason, itemClass: cls,
                                        attributes: attributes.filter { !$0.key.hasPrefix(.store) }, secret: secret))
            }
            return out
        }
    }

    // MARK: Internals (mutex held, in the caller's transaction)

    /// Keeps a stored item's sealed parts as they are: no key needed, so a version whose class
    /// key is locked is kept too.
    func keepInHistory(_ item: StoredItem, reason: HistoryReason) throws {
        try createHistoryTable()
        try store.db.prepare("""
            INSERT INTO item_history(at, reason, item, cls, pdmn, wrapped_key, attrs, data) VALUES(?, ?, ?, ?, ?, ?, ?, ?)
            """).bind(.integer(Int64(AbsoluteTime.unix(AbsoluteTime.now()))), .integer(reason.rawValue), .blob(item.uuid),
                      .integer(Int64(item.itemClass.code)), .integer(Int64(item.protection.code)), .blob(item.wrappedKey),
                      .blob(item.attributes), .blob(item.secret)).run()
    }

    func openKept(_ row: StoredItem, classKey: SecureBytes, needSecret: Bool) throws -> (Attributes, SecureBytes?) {
        let ad = { (part: ItemCodec.Part) in self.associatedData(row, part) }
        do {
            let itemKey = try AEAD.open(row.wrappedKey, key: classKey, associatedData: ad(.itemKey))
            defer { itemKey.wipe() }
            let attributes = try ItemCodec.decode(try AEAD.open(row.attributes, key: itemKey, associatedData: ad(.attributes)))
            let secret = needSecret ? try AEAD.open(row.secret, key: itemKey, associatedData: ad(.secret)) : nil
            return (attributes, secret)
        } catch {
            throw isAllocationFailure(error) ? KeychainStatus.allocate : KeychainStatus.decode
        }
    }

    func createHistoryTable() throws {
        try store.db.execute("""
            CREATE TABLE IF NOT EXISTS item_history(id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL,
                reason INTEGER NOT NULL, item BLOB NOT NULL, cls INTEGER NOT NULL, pdmn INTEGER NOT NULL,
                wrapped_key BLOB NOT NULL, attrs BLOB NOT NULL, data BLOB NOT NULL)
            """)
    }
}
