import SQLiteStore

/// A log entry of fleet sync kept here until it can be applied: a change to an item whose
/// class key is locked (WhenUnlocked) that arrived while the vault was locked. It is the
/// server's ciphertext as it came, signed and sealed; nothing here opens it.
public struct QueuedSyncEntry: Sendable {
    public var seq: Int64
    public var token: [UInt8]
    public var version: Int64
    public var deleted: Bool
    public var record: [UInt8]

    public init(seq: Int64, token: [UInt8], version: Int64, deleted: Bool, record: [UInt8]) {
        self.seq = seq
        self.token = token
        self.version = version
        self.deleted = deleted
        self.record = record
    }
}

/// The queue of entries waiting for an unlock (`sync_pending`, created on first use). Kept in
/// the vault, so a restart of the daemon or a server that is gone by then loses none of them.
extension Vault {
    /// Keeps an entry for later; the same log position twice is kept once.
    public func queueSyncEntry(_ e: QueuedSyncEntry) throws {
        try mutex.withLock {
            try createSyncQueue()
            try store.db.prepare("INSERT OR REPLACE INTO sync_pending(seq, token, version, deleted, record) VALUES(?, ?, ?, ?, ?)")
                .bind(.integer(e.seq), .blob(e.token), .integer(e.version), .integer(e.deleted ? 1 : 0), .blob(e.record)).run()
        }
    }

    /// Every waiting entry, in log order.
    public func queuedSyncEntries() throws -> [QueuedSyncEntry] {
        try mutex.withLock {
            try createSyncQueue()
            let st = try store.db.prepare("SELECT seq, token, version, deleted, record FROM sync_pending ORDER BY seq")
            defer { st.reset() }
            var out: [QueuedSyncEntry] = []
            while try st.step() {
                out.append(QueuedSyncEntry(seq: st.int(0), token: st.blob(1) ?? [], version: st.int(2), deleted: st.int(3) != 0,
                                           record: st.blob(4) ?? []))
            }
            return out
        }
    }

    /// Forgets one waiting entry (applied or refused), or with nil all of them (leaving a circle).
    public func dropQueuedSyncEntry(_ seq: Int64?) throws {
        try mutex.withLock {
            try createSyncQueue()
            if let seq {
                try store.db.prepare("DELETE FROM sync_pending WHERE seq = ?").bind(.integer(seq)).run()
            } else {
                try store.db.execute("DELETE FROM sync_pending")
            }
        }
    }

    private func createSyncQueue() throws {
        try store.db.execute("""
            CREATE TABLE IF NOT EXISTS sync_pending(seq INTEGER PRIMARY KEY, token BLOB NOT NULL, version INTEGER NOT NULL,
                                                    deleted INTEGER NOT NULL, record BLOB NOT NULL)
            """)
    }
}
