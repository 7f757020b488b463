/// Pruning of the server's log (docs/sync.md, "Pruning"): what every member has read and a
/// later version replaced, and tombstones every member has read, are deleted. `circles.pruned`
/// is the log position up to which that was done; a host whose cursor is below it missed
/// entries and reads the whole log again (`SyncSession.pullLocked`). A member not seen for
/// longer than the circle's retention (`circles.retention_days`) holds nothing back.
extension SyncServer {
    /// A server made before pruning lacks `circles.pruned`, the log's token index and
    /// `circles.retention_days`: adds them (once; otherwise a look at the catalog, as DDL would
    /// lock the tables). The retention column is the newest of them, so it stands for all.
    func upgradeSchema() throws {
        let r = try db.exec("""
            SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('keychainfs.circles') AND attname = 'retention_days'
              AND NOT attisdropped
            """)
        if r.rows == 0 { try createSchema() }
    }

    /// The lowest cursor of the circle's members seen within its retention (`$1` the circle):
    /// every one of them has read every entry at or below it.
    static let horizon = """
        SELECT coalesce(min(h.cursor), 0) FROM keychainfs.hosts h WHERE h.circle = $1
          AND h.seen_at >= now() - make_interval(days => (SELECT retention_days FROM keychainfs.circles WHERE circle = $1))
        """

    /// The log position up to which the circle's log was pruned (0: never). Also marks this
    /// host seen: a host reading nothing new moves no cursor, so at most once an hour its
    /// `seen_at` is set here, under the circle's counter row. A prune in progress (which may
    /// have left this host out as unseen) ends first and its position is the one returned;
    /// every prune after counts this host, so none removes what it has not read.
    func prunedPosition(_ circle: [UInt8], host: [UInt8]) throws -> Int64 {
        let r = try db.exec("""
            SELECT c.pruned, coalesce(h.seen_at < now() - interval '1 hour', false)
            FROM keychainfs.circles c LEFT JOIN keychainfs.hosts h ON h.circle = c.circle AND h.host = $2
            WHERE c.circle = $1
            """, [.bytes(circle), .bytes(host)])
        guard r.rows == 1 else { throw SyncError.server("no such circle") }
        guard r.bool(0, 1) else { return r.int(0, 0) }
        return try db.transaction {
            let held = try db.exec("SELECT pruned FROM keychainfs.circles WHERE circle = $1 FOR UPDATE", [.bytes(circle)])
            guard held.rows == 1 else { throw SyncError.server("no such circle") }
            try db.exec("UPDATE keychainfs.hosts SET seen_at = now() WHERE circle = $1 AND host = $2", [.bytes(circle), .bytes(host)])
            return held.int(0, 0)
        }
    }

    /// Sets the circle's retention (days a member may go unseen before pruning leaves it out;
    /// 30 when made, the schema's default); every member prunes by it from its next round.
    func setRetentionDays(_ circle: [UInt8], _ days: Int) throws {
        let r = try db.exec("UPDATE keychainfs.circles SET retention_days = $2 WHERE circle = $1",
                            [.bytes(circle), .int(Int64(days))])
        guard r.affected == 1 else { throw SyncError.server("no such circle") }
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

    /// What a prune did, and the retention it pruned by.
    struct Pruned {
        var log = 0, tombstones = 0
        var retentionDays: Int
    }

    /// Prunes up to the lowest cursor of the circle's members seen within its retention
    /// (removed hosts have no row, so they hold nothing back; a member approved but not yet
    /// read has cursor 0 and holds it all; one unseen longer than the retention is left out and
    /// resyncs fully when it returns). Only what lies between the last pruned position and that
    /// one is looked at. Skips when a writer or another pruner holds the counter row: the next
    /// round prunes.
    func prune(_ circle: [UInt8]) throws -> Pruned {
        let peek = try db.exec("SELECT pruned, retention_days, (\(Self.horizon)) FROM keychainfs.circles WHERE circle = $1",
                               [.bytes(circle)])
        guard peek.rows == 1 else { throw SyncError.server("no such circle") }
        var outcome = Pruned(retentionDays: Int(peek.int(0, 1)))
        guard peek.int(0, 2) > peek.int(0, 0) else { return outcome }
        return try db.transaction {
            let held = try db.exec("SELECT pruned FROM keychainfs.circles WHERE circle = $1 FOR UPDATE SKIP LOCKED",
                                   [.bytes(circle)])
            guard held.rows == 1 else { return outcome }
            let from = held.int(0, 0)
            // Read again under the row: a cursor only moves forward, or a new member's is 0,
            // or a member returned (`prunedPosition` marks it seen under this row).
            let horizon = try db.exec(Self.horizon, [.bytes(circle)]).int(0, 0)
            guard horizon > from else { return outcome }
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
            outcome.log = log
            outcome.tombstones = tombstones
            return outcome
        }
    }
}
