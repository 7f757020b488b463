import CSQLite
import Synchronization

/// SQL whose text is fixed in the program, prepared once per connection and found again by a
/// slot number rather than by hashing its text: the statements a search runs on every call.
public final class StaticSQL: Sendable {
    public let text: String
    let slot: Int
    private static let slots = Atomic<Int>(0)

    public init(_ text: String) {
        self.text = text
        slot = StaticSQL.slots.wrappingAdd(1, ordering: .relaxed).oldValue
    }
}

/// One SQLite connection. Not thread-safe: one thread at a time uses it (the vault's write
/// connection under the vault's mutex, a reader connection while a search holds it). Its
/// statement caches are its own.
public final class Connection: @unchecked Sendable {
    // Unchecked: an sqlite3* and its statement cache, sent only inside a Vault, whose lock serialises every use.
    let handle: OpaquePointer
    // One thread at a time uses a connection, so Swift's run-time exclusivity check on its
    // caches (a thread-local lookup per access) is left out.
    @exclusivity(unchecked) private var statementCache: [String: Statement] = [:]
    @exclusivity(unchecked) private var staticStatements: [Statement?] = []
    /// Kept alive as long as SQLite may call it (`afterEachCommit`).
    var commitHook: CommitHook?
    public let path: String

    /// Opens (`sqlite3_open_v2`) the database at `path`.
    /// - Parameter create: create the file when missing; otherwise a missing file is an error.
    public init(path: String, create: Bool, readOnly: Bool = false) throws {
        _ = Connection.configureLibrary
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message)
        }
        self.handle = db
        self.path = path
        sqlite3_busy_timeout(db, 5000)
    }

    /// Process-wide settings, made once before the first connection opens: no allocation
    /// statistics (nothing here reads them, and their global mutex is where readers on other
    /// threads would meet on every allocation). If something opened SQLite first, SQLite keeps
    /// its own settings and this changes nothing.
    private static let configureLibrary: Void = {
        _ = keychainfs_sqlite3_disable_memstatus()
    }()

    deinit {
        statementCache.removeAll()
        staticStatements.removeAll()
        sqlite3_wal_hook(handle, nil, nil)
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements without arguments (`sqlite3_exec`).
    public func execute(_ sql: String) throws {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(errmsg)
            throw SQLiteError(code: sqlite3_extended_errcode(handle), message: message)
        }
    }

    /// A prepared statement, cached by its SQL text and reset before reuse.
    public func prepare(_ sql: String) throws -> Statement {
        if let cached = statementCache[sql] {
            cached.reset()
            return cached
        }
        let statement = try Statement(connection: self, sql: sql)
        statementCache[sql] = statement
        return statement
    }

    /// The statement of `sql`, prepared at its first use on this connection, reset before reuse.
    public func prepare(_ sql: StaticSQL) throws -> Statement {
        if sql.slot < staticStatements.count, let cached = staticStatements[sql.slot] {
            cached.resetIfBusy()  // its last user reset it, bindings cleared; this is for one that did not
            return cached
        }
        let statement = try Statement(connection: self, sql: sql.text)
        if sql.slot >= staticStatements.count {
            staticStatements.append(contentsOf: repeatElement(nil, count: sql.slot + 1 - staticStatements.count))
        }
        staticStatements[sql.slot] = statement
        return statement
    }

    /// A statement the caller keeps (and finalizes by releasing), outside both caches.
    public func makeStatement(_ sql: String) throws -> Statement {
        try Statement(connection: self, sql: sql)
    }

    /// Runs `body` inside `BEGIN IMMEDIATE ... COMMIT`, rolling back when it throws.
    public func transaction<R>(_ body: () throws -> R) throws -> R {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The rowid of the last successful insert.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }

    func error(_ rc: Int32) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle), message: lastMessage)
    }

    /// The bytes this connection's page cache holds now (`sqlite3_db_status`,
    /// `SQLITE_DBSTATUS_CACHE_USED`); counted without the allocation statistics turned off above.
    public var pageCacheBytes: Int {
        var current: Int32 = 0, highest: Int32 = 0
        guard sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0) == SQLITE_OK else { return 0 }
        return Int(current)
    }

    /// Runs a query returning one integer, such as a PRAGMA.
    public func scalarInt(_ sql: String) throws -> Int64? {
        let st = try prepare(sql)
        defer { st.reset() }
        guard try st.step() else { return nil }
        return st.int(0)
    }

    /// Runs a query returning one text, such as `PRAGMA journal_mode`.
    public func scalarText(_ sql: String) throws -> String? {
        let st = try prepare(sql)
        defer { st.reset() }
        guard try st.step() else { return nil }
        return st.text(0)
    }
}
