import CSQLite

/// One SQLite connection. Not thread-safe: callers serialise access (the vault holds a lock).
public final class Connection: @unchecked Sendable {
    // Unchecked: an sqlite3* and its statement cache, sent only inside a Vault, whose lock serialises every use.
    let handle: OpaquePointer
    private var statementCache: [String: Statement] = [:]
    public let path: String

    /// Opens (`sqlite3_open_v2`) the database at `path`.
    /// - Parameter create: create the file when missing; otherwise a missing file is an error.
    public init(path: String, create: Bool, readOnly: Bool = false) throws {
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

    deinit {
        statementCache.removeAll()
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
