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

    /// Binds values to parameters 1...n.
    @discardableResult
    public func bind(_ values: SQLiteValue...) throws -> Statement {
        try bind(values)
    }

    @discardableResult
    public func bind(_ values: [SQLiteValue]) throws -> Statement {
        for (i, value) in values.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .text(let s): rc = sqlite3_bind_text(handle, index, s, -1, transient)
            case .blob(let b):
                rc = b.withUnsafeBytes { buf in
                    // A zero-length blob still binds as a blob, not NULL.
                    sqlite3_bind_blob(handle, index, buf.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buf.count), transient)
                }
            }
            guard rc == SQLITE_OK else { throw connection.error(rc) }
        }
        return self
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

    public func blob(_ column: Int32) -> [UInt8]? {
        if isNull(column) { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let p = sqlite3_column_blob(handle, column) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: p, count: count))
    }
}
