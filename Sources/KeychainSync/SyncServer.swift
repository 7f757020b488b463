import KeychainCore
import KeychainCrypto

/// The server side of fleet sync: PostgreSQL tables that hold only ciphertext, blind tokens,
/// public keys and timestamps (docs/sync.md, "What the server sees"). One schema,
/// `keychainfs`, can hold many circles.
final class SyncServer: @unchecked Sendable {
    // Unchecked: libpq's connection has one user at a time: a session with its lock held, or
    // the pool between rounds (`SyncServerPool`).
    let db: PGConnection
    /// What it was made with: the pool's key.
    let conninfo: String

    init(conninfo: String) throws {
        db = try PGConnection(conninfo: conninfo)
        self.conninfo = conninfo
    }

    /// Creates the tables when missing. The log's order comes from one counter row per circle
    /// (`circles.seq`), advanced in the writing transaction: its row lock makes writers of a
    /// circle commit one at a time, so a reader that has seen `seq` N has seen every write
    /// below it. A plain sequence would hand out numbers that can commit out of order.
    static let schema = """
        CREATE SCHEMA IF NOT EXISTS keychainfs;
        CREATE TABLE IF NOT EXISTS keychainfs.circles(
            circle bytea PRIMARY KEY,
            seq int8 NOT NULL DEFAULT 0,
            created_at timestamptz NOT NULL DEFAULT now());
        CREATE TABLE IF NOT EXISTS keychainfs.items(
            circle bytea NOT NULL REFERENCES keychainfs.circles ON DELETE CASCADE,
            token bytea NOT NULL,
            version int8 NOT NULL,
            seq int8 NOT NULL,
            deleted boolean NOT NULL,
            record bytea NOT NULL,
            written_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY(circle, token));
        CREATE TABLE IF NOT EXISTS keychainfs.log(
            circle bytea NOT NULL REFERENCES keychainfs.circles ON DELETE CASCADE,
            seq int8 NOT NULL,
            token bytea NOT NULL,
            version int8 NOT NULL,
            deleted boolean NOT NULL,
            record bytea NOT NULL,
            written_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY(circle, seq));
        CREATE TABLE IF NOT EXISTS keychainfs.hosts(
            circle bytea NOT NULL REFERENCES keychainfs.circles ON DELETE CASCADE,
            host bytea NOT NULL,
            sign_key bytea NOT NULL,
            box_key bytea NOT NULL,
            approved_by bytea NOT NULL,
            endorsement bytea NOT NULL,
            cursor int8 NOT NULL DEFAULT 0,
            seen_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY(circle, host));
        CREATE TABLE IF NOT EXISTS keychainfs.joins(
            host bytea PRIMARY KEY,
            request bytea NOT NULL,
            grant_box bytea,
            created_at timestamptz NOT NULL DEFAULT now());
        CREATE TABLE IF NOT EXISTS keychainfs.epochs(
            circle bytea NOT NULL REFERENCES keychainfs.circles ON DELETE CASCADE,
            epoch int8 NOT NULL,
            host bytea NOT NULL,
            seq int8 NOT NULL,
            removed bytea NOT NULL,
            sealed bytea NOT NULL,
            signer bytea NOT NULL,
            signature bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY(circle, epoch, host));
        ALTER TABLE keychainfs.circles ADD COLUMN IF NOT EXISTS pruned int8 NOT NULL DEFAULT 0;
        CREATE INDEX IF NOT EXISTS log_token ON keychainfs.log(circle, token, seq);
        ALTER TABLE keychainfs.circles ADD COLUMN IF NOT EXISTS retention_days int4 NOT NULL DEFAULT 30;
        """

    func createSchema() throws {
        // Two first hosts at once would race on CREATE ... IF NOT EXISTS; one lock orders them.
        try db.transaction {
            try db.exec("SELECT pg_advisory_xact_lock(7283945)")
            for statement in Self.schema.split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
                try db.exec(String(statement))
            }
        }
    }

    static func channel(_ circle: [UInt8]) -> String { "keychainfs_" + hex(circle) }

    // MARK: Circle and members

    func createCircle(_ circle: [UInt8], founder: MemberEntry) throws {
        try db.transaction {
            try db.exec("INSERT INTO keychainfs.circles(circle) VALUES($1)", [.bytes(circle)])
            try addMember(circle, founder)
        }
    }

    func addMember(_ circle: [UInt8], _ m: MemberEntry) throws {
        try db.exec("""
            INSERT INTO keychainfs.hosts(circle, host, sign_key, box_key, approved_by, endorsement) VALUES($1, $2, $3, $4, $5, $6)
            ON CONFLICT (circle, host) DO UPDATE SET sign_key = $3, box_key = $4, approved_by = $5, endorsement = $6
            """, [.bytes(circle), .bytes(m.hostID), .bytes(m.signKey), .bytes(m.boxKey), .bytes(m.approvedBy), .bytes(m.endorsement)])
    }

    func members(_ circle: [UInt8]) throws -> [MemberEntry] {
        let r = try db.exec("SELECT host, sign_key, box_key, approved_by, endorsement FROM keychainfs.hosts WHERE circle = $1",
                            [.bytes(circle)])
        return (0..<r.rows).map {
            MemberEntry(hostID: r.bytes($0, 0), signKey: r.bytes($0, 1), boxKey: r.bytes($0, 2),
                        approvedBy: r.bytes($0, 3), endorsement: r.bytes($0, 4))
        }
    }

    func removeMember(_ circle: [UInt8], host: [UInt8]) throws {
        try db.exec("DELETE FROM keychainfs.hosts WHERE circle = $1 AND host = $2", [.bytes(circle), .bytes(host)])
    }

    func setCursor(_ circle: [UInt8], host: [UInt8], _ cursor: Int64) throws {
        try db.exec("UPDATE keychainfs.hosts SET cursor = $3, seen_at = now() WHERE circle = $1 AND host = $2",
                    [.bytes(circle), .bytes(host), .int(cursor)])
    }

    // MARK: Joins

    func postJoin(host: [UInt8], request: [UInt8]) throws {
        try db.exec("INSERT INTO keychainfs.joins(host, request) VALUES($1, $2)", [.bytes(host), .bytes(request)])
    }

    /// Joins not yet granted, newest first; a bounded number, each costs the approver an Argon2id.
    func pendingJoins(limit: Int = 16) throws -> [(host: [UInt8], request: [UInt8])] {
        let r = try db.exec("""
            SELECT host, request FROM keychainfs.joins WHERE grant_box IS NULL ORDER BY created_at DESC LIMIT $1
            """, [.int(Int64(limit))])
        return (0..<r.rows).map { (r.bytes($0, 0), r.bytes($0, 1)) }
    }

    func grantJoin(host: [UInt8], grant: [UInt8]) throws {
        try db.exec("UPDATE keychainfs.joins SET grant_box = $2 WHERE host = $1", [.bytes(host), .bytes(grant)])
    }

    /// The grant for a join, once a member approved it.
    func fetchGrant(host: [UInt8]) throws -> [UInt8]? {
        let r = try db.exec("SELECT grant_box FROM keychainfs.joins WHERE host = $1", [.bytes(host)])
        guard r.rows == 1, !r.isNull(0, 0) else { return nil }
        return r.bytes(0, 0)
    }

    func removeJoin(host: [UInt8]) throws {
        try db.exec("DELETE FROM keychainfs.joins WHERE host = $1", [.bytes(host)])
    }

    // MARK: The log

    /// One version to write: compare-and-swap on (token, `expected`).
    struct Write {
        var token: [UInt8]
        var expected: Int64
        var header: SyncRecord.Header
        var record: [UInt8]
    }

    /// What became of one version `write` was given.
    enum Placed: Equatable {
        /// In the log at this position.
        case at(Int64)
        /// Another host wrote first, or the circle's epoch moved on: the caller pulls, adopts
        /// what it reads and writes again.
        case lost
        /// The item has no row here any more: its tombstone was pruned, and this host never
        /// applied it (it refused it). Nothing the caller pulls will change that.
        case gone
    }

    /// Writes many versions in one transaction (one commit, one notification), each in a
    /// savepoint of its own: a lost compare-and-swap undoes that one only. Holds the circle's
    /// counter row from the start, so the epoch checked first stays in force to the commit.
    /// - Returns: what became of each.
    func write(_ circle: [UInt8], _ writes: [Write]) throws -> [Placed] {
        guard !writes.isEmpty else { return [] }
        return try db.transaction {
            let locked = try db.exec("SELECT seq FROM keychainfs.circles WHERE circle = $1 FOR UPDATE", [.bytes(circle)])
            guard locked.rows == 1 else { throw SyncError.server("no such circle") }
            let epoch = try currentEpoch(circle)
            var out: [Placed] = []
            for w in writes {
                guard epoch <= Int64(w.header.epoch) else { out.append(.lost); continue }
                try db.exec("SAVEPOINT one")
                let seq = try db.exec("UPDATE keychainfs.circles SET seq = seq + 1 WHERE circle = $1 RETURNING seq",
                                      [.bytes(circle)]).int(0, 0)
                let values: [PGValue] = [.bytes(circle), .bytes(w.token), .int(w.header.version), .int(seq),
                                         .text(w.header.deleted ? "t" : "f"), .bytes(w.record)]
                let swapped = w.expected == 0
                    ? try db.exec("""
                        INSERT INTO keychainfs.items(circle, token, version, seq, deleted, record) VALUES($1, $2, $3, $4, $5, $6)
                        ON CONFLICT DO NOTHING
                        """, values)
                    : try db.exec("""
                        UPDATE keychainfs.items SET version = $3, seq = $4, deleted = $5, record = $6, written_at = now()
                        WHERE circle = $1 AND token = $2 AND version = $7
                        """, values + [.int(w.expected)])
                guard swapped.affected == 1 else {
                    try db.exec("ROLLBACK TO SAVEPOINT one")
                    let row = w.expected == 0 ? nil : try db.exec("SELECT 1 FROM keychainfs.items WHERE circle = $1 AND token = $2",
                                                                [.bytes(circle), .bytes(w.token)])
                    out.append(row?.rows == 0 ? .gone : .lost)
                    continue
                }
                try db.exec("""
                    INSERT INTO keychainfs.log(circle, seq, token, version, deleted, record) VALUES($1, $4, $2, $3, $5, $6)
                    """, values)
                try db.exec("RELEASE SAVEPOINT one")
                out.append(.at(seq))
            }
            if let last = out.compactMap({ if case .at(let seq) = $0 { seq } else { nil } }).last {
                try db.exec("SELECT pg_notify($1, $2)", [.text(Self.channel(circle)), .text(String(last))])
            }
            return out
        }
    }

    struct LogEntry {
        var seq: Int64
        var token: [UInt8]
        var version: Int64
        var deleted: Bool
        var record: [UInt8]
        /// The record's length on the server; `record` is empty when that is over
        /// `SyncRecord.maximumLength` (never fetched).
        var length: Int
    }

    /// Log entries after `cursor`, in log order: at most `limit`, and no more after `budget`
    /// bytes of records (always one). A hostile server cannot make a round hold more: a record
    /// longer than any host writes comes back empty, with its length, and the reader rejects it.
    func entries(_ circle: [UInt8], after cursor: Int64, limit: Int = pageSize, budget: Int = 64 << 20) throws -> [LogEntry] {
        let r = try db.exec("""
            SELECT seq, token, version, deleted, CASE WHEN octet_length(record) <= $4 THEN record ELSE ''::bytea END,
                   octet_length(record)
            FROM (SELECT seq, token, version, deleted, record,
                         sum(least(octet_length(record), $4)) OVER (ORDER BY seq) - least(octet_length(record), $4) AS before
                  FROM keychainfs.log WHERE circle = $1 AND seq > $2 ORDER BY seq LIMIT $3) page
            WHERE before < $5 ORDER BY seq
            """, [.bytes(circle), .int(cursor), .int(Int64(limit)), .int(Int64(SyncRecord.maximumLength)), .int(Int64(budget))])
        return (0..<r.rows).map {
            LogEntry(seq: r.int($0, 0), token: r.bytes($0, 1), version: r.int($0, 2), deleted: r.bool($0, 3), record: r.bytes($0, 4),
                     length: Int(r.int($0, 5)))
        }
    }

    // MARK: Epochs

    /// The circle's newest epoch (1 until a member is removed).
    func currentEpoch(_ circle: [UInt8]) throws -> Int64 {
        let r = try db.exec("SELECT coalesce(max(epoch), 1) FROM keychainfs.epochs WHERE circle = $1", [.bytes(circle)])
        return r.int(0, 0)
    }

    /// Starts epoch `epoch` if the circle is still at the one before: one row per remaining
    /// member with the new circle key sealed to it, the removed host's entry gone. Takes the
    /// circle's counter row first, so the epoch begins at one place of the log: records
    /// before it are of older epochs, every write after it is checked against it.
    /// - Returns: the log position where it begins. - Throws: `SyncError.circleChanged` when
    ///   another member started that epoch first.
    func startEpoch(_ circle: [UInt8], _ rows: [EpochEntry]) throws -> Int64 {
        guard let first = rows.first else { throw SyncError.malformed }
        return try db.transaction {
            let counter = try db.exec("UPDATE keychainfs.circles SET seq = seq + 1 WHERE circle = $1 RETURNING seq",
                                      [.bytes(circle)])
            guard counter.rows == 1 else { throw SyncError.server("no such circle") }
            let seq = counter.int(0, 0)
            guard try currentEpoch(circle) == Int64(first.epoch) - 1 else { throw SyncError.circleChanged }
            for e in rows {
                try db.exec("""
                    INSERT INTO keychainfs.epochs(circle, epoch, host, seq, removed, sealed, signer, signature)
                    VALUES($1, $2, $3, $4, $5, $6, $7, $8)
                    """, [.bytes(circle), .int(Int64(e.epoch)), .bytes(e.host), .int(seq), .bytes(e.removed), .bytes(e.sealed),
                          .bytes(e.signer), .bytes(e.signature)])
            }
            try removeMember(circle, host: first.removed)
            try db.exec("SELECT pg_notify($1, $2)", [.text(Self.channel(circle)), .text(String(seq))])
            return seq
        }
    }

    /// The epochs after `epoch` whose key was sealed to `host`, oldest first.
    func epochs(_ circle: [UInt8], after epoch: UInt32, for host: [UInt8]) throws -> [EpochEntry] {
        let r = try db.exec("""
            SELECT epoch, seq, removed, sealed, signer, signature FROM keychainfs.epochs
            WHERE circle = $1 AND epoch > $2 AND host = $3 ORDER BY epoch
            """, [.bytes(circle), .int(Int64(epoch)), .bytes(host)])
        return (0..<r.rows).compactMap {
            guard let e = UInt32(exactly: r.int($0, 0)) else { return nil }
            return EpochEntry(epoch: e, host: host, seq: r.int($0, 1), removed: r.bytes($0, 2), sealed: r.bytes($0, 3),
                              signer: r.bytes($0, 4), signature: r.bytes($0, 5))
        }
    }

    func listen(_ circle: [UInt8]) throws {
        try db.exec("LISTEN \"\(Self.channel(circle))\"")
    }
}

/// A member as the server lists it: public keys, and the signature of the member that
/// approved it (a founder signs itself) over `"keychainfs sync member v1" || circle || host ||
/// sign key || box key`.
struct MemberEntry: Equatable {
    var hostID: [UInt8]
    var signKey: [UInt8]
    var boxKey: [UInt8]
    var approvedBy: [UInt8]
    var endorsement: [UInt8]

    static func message(circle: [UInt8], host: [UInt8], signKey: [UInt8], boxKey: [UInt8]) -> [UInt8] {
        Array("keychainfs sync member v1".utf8) + circle + host + signKey + boxKey
    }

    static func endorse(circle: [UInt8], host: [UInt8], signKey: [UInt8], boxKey: [UInt8], by approver: HostKeys) throws -> MemberEntry {
        MemberEntry(hostID: host, signKey: signKey, boxKey: boxKey, approvedBy: approver.hostID,
                    endorsement: try approver.sign(message(circle: circle, host: host, signKey: signKey, boxKey: boxKey)))
    }

    func isEndorsed(circle: [UInt8], by approverKey: [UInt8]) -> Bool {
        Signature.verify(endorsement, of: Self.message(circle: circle, host: hostID, signKey: signKey, boxKey: boxKey),
                         publicKey: approverKey)
    }
}

/// One remaining member's share of a new epoch: the new circle key sealed to its box key, and
/// the signature of the member that removed `removed` over `"keychainfs sync epoch v1" ||
/// circle || epoch (u32) || removed || host || sealed`. `seq` is the server's: where the epoch
/// begins in the log.
struct EpochEntry {
    var epoch: UInt32
    var host: [UInt8]
    var seq: Int64
    var removed: [UInt8]
    var sealed: [UInt8]
    var signer: [UInt8]
    var signature: [UInt8]

    static func message(circle: [UInt8], epoch: UInt32, removed: [UInt8], host: [UInt8], sealed: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("keychainfs sync epoch v1".utf8))
        w.raw(circle)
        w.u32(epoch)
        w.raw(removed)
        w.raw(host)
        w.raw(sealed)
        return w.bytes
    }

    func isSigned(circle: [UInt8], by signKey: [UInt8]) -> Bool {
        Signature.verify(signature, of: Self.message(circle: circle, epoch: epoch, removed: removed, host: host, sealed: sealed),
                         publicKey: signKey)
    }
}

func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
    return String(decoding: out, as: UTF8.self)
}
