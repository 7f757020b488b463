import CSQLite

/// A SQLite failure: the result code and SQLite's message. Never carries statement arguments.
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The extended result code (`sqlite3_extended_errcode`).
    public let code: Int32
    public let message: String

    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// The primary result code (low byte of the extended one).
    public var primaryCode: Int32 { code & 0xff }
    public var isConstraintViolation: Bool { primaryCode == SQLITE_CONSTRAINT }
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }
    public var isDiskFull: Bool { primaryCode == SQLITE_FULL }
    /// The file is not a database, or is corrupt.
    public var isNotADatabase: Bool { primaryCode == SQLITE_NOTADB || primaryCode == SQLITE_CORRUPT }

    public var description: String { "SQLite error \(code): \(message)" }
}
