/// A host far behind (a new member reads the whole log) reads the log in one pass: a
/// server-side cursor in one read-only transaction, fetched in large batches, instead of a
/// page query per 500 entries (docs/sync.md, "A new host").
extension SyncServer {
    /// Entries a page holds (`entries`): a full one means more may follow.
    static let pageSize = 500

    /// Records up to this length come with their fetch; a longer one (a large item) is read
    /// alone, so a fetch holds at most `fetchSize` times this many bytes of records (16 MiB).
    static let inlineRecord = 4096

    /// Entries a long read checks and writes at a time (one vault transaction each), fetched
    /// `fetchSize` at a time: a vault transaction rewrites each index page it touches once,
    /// so larger ones write fewer pages per entry (most of a batch of thousands' pages at a
    /// million items).
    static var streamBatch: Int { SyncEngine.longReadBatch.load(ordering: .relaxed) }
    static let fetchSize = 4096
    /// A batch ends sooner once it holds this many bytes of records (a log of large items).
    static let streamBatchBytes = 16 << 20

    /// Hands `body` the log after `cursor` in log order, `batch` entries at a time (the first
    /// batch `fetchSize`; fewer once a batch's records reach `streamBatchBytes`, so at most one
    /// fetch more), from one snapshot (`DECLARE ... CURSOR` in a `REPEATABLE READ READ ONLY`
    /// transaction, `FETCH` of `fetchSize`), with the batch after it (nil at the end), fetched
    /// first so `body` can start on it.
    /// `body` may read from the server between batches, not write. A record longer than
    /// `SyncRecord.maximumLength` comes empty with its length, as from `entries`.
    /// - Throws: `PostgresError`, or what `body` throws (the transaction ends either way).
    func streamEntries(_ circle: [UInt8], after cursor: Int64, batch: Int = streamBatch,
                       _ body: (_ entries: [LogEntry], _ next: [LogEntry]?) throws -> Void) throws {
        try db.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        do {
            try db.exec("""
                DECLARE log_stream NO SCROLL CURSOR FOR
                SELECT seq, token, version, deleted, CASE WHEN octet_length(record) <= $3 THEN record END, octet_length(record)
                FROM keychainfs.log WHERE circle = $1 AND seq > $2 ORDER BY seq
                """, [.bytes(circle), .int(cursor), .int(Int64(Self.inlineRecord))])
            let fetchSize = min(batch, Self.fetchSize)
            var ended = false
            func fetch(_ batch: Int) throws -> [LogEntry]? {
                var entries: [LogEntry] = []
                var bytes = 0
                while !ended, entries.count < batch, bytes < Self.streamBatchBytes {
                    let r = try db.exec("FETCH FORWARD \(min(fetchSize, batch - entries.count)) FROM log_stream")
                    if r.rows == 0 { ended = true; break }
                    entries.reserveCapacity(entries.count + r.rows)
                    for i in 0..<r.rows {
                        let length = Int(r.int(i, 5))
                        let record = r.isNull(i, 4) ? try longRecord(circle, seq: r.int(i, 0), length: length) : r.bytes(i, 4)
                        bytes += record.count
                        entries.append(LogEntry(seq: r.int(i, 0), token: r.bytes(i, 1), version: r.int(i, 2), deleted: r.bool(i, 3),
                                                record: record, length: length))
                    }
                }
                return entries.isEmpty ? nil : entries
            }
            // The first batch is checked with nothing opened ahead: one fetch's worth, so the
            // second (opened ahead while the first is written) comes soon.
            var current = try fetch(fetchSize)
            while let entries = current {
                let next = try fetch(batch)
                try body(entries, next)
                current = next
            }
            try db.exec("COMMIT")
        } catch {
            _ = try? db.exec("ROLLBACK")
            throw error
        }
    }

    /// A record longer than `inlineRecord`: read alone, never one longer than any host writes.
    private func longRecord(_ circle: [UInt8], seq: Int64, length: Int) throws -> [UInt8] {
        guard length <= SyncRecord.maximumLength else { return [] }
        let r = try db.exec("SELECT record FROM keychainfs.log WHERE circle = $1 AND seq = $2", [.bytes(circle), .int(seq)])
        return r.rows == 1 ? r.bytes(0, 0) : []
    }
}
