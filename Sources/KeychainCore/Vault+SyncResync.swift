/// A full resync (docs/sync.md, "Pruning"): when the server pruned the log past this host's
/// cursor, the tombstones it missed are gone, so the host compares what it exchanged with the
/// items the log still has.
extension Vault {
    /// Every item this vault sent or received through sync (its `sync_items` rows).
    public func exchangedSyncItems() throws -> [[UInt8]] {
        try mutex.withLock {
            try createSyncTable()
            let st = try store.db.prepare("SELECT uuid FROM sync_items")
            defer { st.reset() }
            var out: [[UInt8]] = []
            while try st.step() { out.append(st.blob(0) ?? []) }
            return out
        }
    }

    /// An exchanged item whose token the log no longer holds: another host deleted it and the
    /// tombstone was pruned. Unchanged here since it was exchanged, it is deleted as the
    /// tombstone would have; changed here (not yet sent), it stays, a copy goes to its history
    /// (`missedDelete`) and it is sent again as a new item. One transaction, so a change made
    /// meanwhile is seen. - Returns: what was deleted (nil when nothing), and whether it was kept.
    public func resolveMissedDelete(uuid: [UInt8]) throws -> (deleted: SyncApplied?, kept: Bool) {
        try mutex.withLock {
            try store.db.transaction {
                try createSyncTable()
                if let e = try store.item(uuid: uuid), e.synchronizable, try hasUnsentChange(e) {
                    try keepInHistory(e, reason: .missedDelete)
                    try store.db.prepare("DELETE FROM sync_items WHERE uuid = ?").bind(.blob(uuid)).run()
                    try store.db.prepare("INSERT OR IGNORE INTO sync_dirty(uuid) VALUES(?)").bind(.blob(uuid)).run()
                    return (nil, true)
                }
                return (try deleteSyncedLocked(uuid), false)
            }
        }
    }
}
