/// Pruning of the server's log (docs/sync.md, "Pruning"): what every member has read and a
/// later version replaced, and tombstones every member has read, are deleted. `circles.pruned`
/// is the log position up to which that was done; a host whose cursor is below it missed
/// entries and reads the whole log again (`SyncSession.pullLocked`).
extension SyncServer {
    /// A server made before pruning lacks `circles.pruned` and the log's token index: adds them
    /// (once; otherwise a look at the catalog, as DDL would lock the tables).
    func upgradeSchema() throws {
        let r = try db.exec("SELECT 1 FROM pg_indexes WHERE schemaname = 'keychainfs' AND indexname = 'log_token'")
        if r.rows == 0 { try createSchema() }
    }

    /// The log position up to which the circle's log was pruned (0: never).
    func prunedPosition(_ circle: [UInt8]) throws -> Int64 {
        let r = try db.exec("SELECT pruned FROM keychainfs.circles WHERE circle = $1", [.bytes(circle)])
        guard r.rows == 1 else { throw SyncError.server("no such circle") }
        return r.int(0, 0)
    }

    /// Sets this host's cursor to 0 for a full resync, under the counter row: a prune in
    /// progress (which holds the row from reading its horizon to its commit) ends first, and
    /// none after prunes anything this host has not read again.
    func holdPruning(_ circle: [UInt8], host: [UInt8]) throws {
        try db.transaction {
            let held = try db.exec("SELECT seq FROM keychainfs.circles WHERE circle = $1 FOR UPDATE", [.bytes(circle)])
            guard held.rows == 1 else { throw SyncError.server("no such circle") }
            try setCursor(circle, host: host, 0)
        }
    }

    /// Prunes up to the lowest cursor of the circle's members (removed hosts have no row, so
    /// they hold nothing back; a member approved but not yet read has cursor 0 and holds it
    /// all). Only what lies between the last pruned position and that one is looked at. Skips
    /// when a writer or another pruner holds the counter row: the next round prunes.
    /// - Returns: the log rows and tombstone rows of `items` deleted.
    func prune(_ circle: [UInt8]) throws -> (log: Int, tombstones: Int) {
        let peek = try db.exec("""
            SELECT pruned, (SELECT coalesce(min(cursor), 0) FROM keychainfs.hosts WHERE circle = $1)
            FROM keychainfs.circles WHERE circle = $1
            """, [.bytes(circle)])
        guard peek.rows == 1, peek.int(0, 1) > peek.int(0, 0) else { return (0, 0) }
        return try db.transaction {
            let held = try db.exec("SELECT pruned FROM keychainfs.circles WHERE circle = $1 FOR UPDATE SKIP LOCKED",
                                   [.bytes(circle)])
            guard held.rows == 1 else { return (0, 0) }
            let from = held.int(0, 0)
            // Read again under the row: a cursor only moves forward, or a new member's is 0.
            let horizon = try db.exec("SELECT coalesce(min(cursor), 0) FROM keychainfs.hosts WHERE circle = $1",
                                      [.bytes(circle)]).int(0, 0)
            guard horizon > from else { return (0, 0) }
            // Each entry of (from, horizon] removes the older versions of its item, and itself
            // when it is a tombstone; every member has read all of them.
            let log = try db.exec("""
                DELETE FROM keychainfs.log l USING keychainfs.log r
                WHERE r.circle = $1 AND r.seq > $2 AND r.seq <= $3 AND l.circle = $1 AND l.token = r.token
                  AND (l.seq < r.seq OR (l.seq = r.seq AND r.deleted))
                """, [.bytes(circle), .int(from), .int(horizon)]).affected
            let tombstones = try db.exec("""
                DELETE FROM keychainfs.items WHERE circle = $1 AND deleted AND seq <= $2
                """, [.bytes(circle), .int(horizon)]).affected
            try db.exec("UPDATE keychainfs.circles SET pruned = $2 WHERE circle = $1", [.bytes(circle), .int(horizon)])
            return (log, tombstones)
        }
    }
}
