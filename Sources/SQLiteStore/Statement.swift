import CSQLite

// SQLITE_TRANSIENT tells SQLite to copy bound bytes before the call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A value bound to a statement parameter.
public enum SQLiteValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case blob([UInt8])
    case text(String)
}

/// A prepared statement (`sqlite3_prepare_v2`). Parameters are 1-based, columns 0-based.
public final class Statement {
    private let handle: OpaquePointer
    private unowned let connection: Connection

    init(connection: Connection, sql: String) throws {
        var st: OpaquePointer?
        let rc = sqlite3_prepare_v2(connection.handle, sql, -1, &st, nil)
        guard rc == SQLITE_OK, let st else { throw connection.error(rc) }
        self.handle = st
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and clears its bindings, so no argument lingers in SQLite's memory.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// `reset()` when a step began and the statement was not reset since (`sqlite3_stmt_busy`).
    public func resetIfBusy() {
        if sqlite3_stmt_busy(handle) != 0 { reset() }
    }

    /// Binds values to parameters 1...n.
    @discardableResult
    public func bind(_ values: SQLiteValue...) throws -> Statement {
        try bind(values)
    }

    @discardableResult
    public func bind(_ values: [SQLiteValue]) throws -> Statement {
        for (i, value) in values.enumerated() {
            let index = Int32(i + 1)
            switch value {
            case .null: try bindNull(at: index)
            case .integer(let v): try bind(integer: v, at: index)
            case .text(let s):
                let rc = sqlite3_bind_text(handle, index, s, -1, transient)
                guard rc == SQLITE_OK else { throw connection.error(rc) }
            case .blob(let b): try bind(blob: b, at: index)
            }
        }
        return self
    }

    /// Binds bytes to parameter `index` (1-based) without building a value first; SQLite copies
    /// them (`sqlite3_bind_blob` with `SQLITE_TRANSIENT`). An empty buffer binds an empty blob.
    public func bind(blob bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        let rc = sqlite3_bind_blob(handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), transient)
        guard rc == SQLITE_OK else { throw connection.error(rc) }
    }

    public func bind(blob bytes: [UInt8], at index: Int32) throws {
        try bytes.withUnsafeBytes { try bind(blob: $0, at: index) }
    }

    /// Binds an integer to parameter `index` (`sqlite3_bind_int64`).
    public func bind(integer value: Int64, at index: Int32) throws {
        let rc = sqlite3_bind_int64(handle, index, value)
        guard rc == SQLITE_OK else { throw connection.error(rc) }
    }

    /// Binds NULL to parameter `index` (`sqlite3_bind_null`).
    public func bindNull(at index: Int32) throws {
        let rc = sqlite3_bind_null(handle, index)
        guard rc == SQLITE_OK else { throw connection.error(rc) }
    }

    /// Steps once (`sqlite3_step`): true when a row is available, false when done.
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(rc)
        }
    }

    /// Runs to completion, for statements that return no rows.
    public func run() throws {
        defer { reset() }
        while try step() {}
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    public func int(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    public func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: p)
    }

    /// A column's bytes where SQLite holds them (`sqlite3_column_blob`), without a copy: valid
    /// only inside `body`, and only until this statement steps or resets. NULL and an empty
    /// blob read as an empty buffer.
    public func withBlob<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let p = sqlite3_column_blob(handle, column)  // before the length, as SQLite asks
        let count = Int(sqlite3_column_bytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: count > 0 ? p : nil, count: count > 0 && p != nil ? count : 0))
    }

    public func blob(_ column: Int32) -> [UInt8]? {
        if isNull(column) { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let p = sqlite3_column_blob(handle, column) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: p, count: count))
    }
}
