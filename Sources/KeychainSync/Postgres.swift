import CPostgres

/// A failure talking to PostgreSQL. The text is libpq's or the server's message, which names
/// no parameter value (values are sent out of line, never spliced into SQL).
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public var message: String
    /// The SQLSTATE code, when the server sent one (`40001` serialization failure, ...).
    public var state: String?
    public var description: String { message }
}

/// A parameter of a query: text, or bytes sent in binary (`bytea`).
enum PGValue {
    case text(String)
    case bytes([UInt8])
    case int(Int64)
    case null
}

/// One libpq connection (`PQconnectdb`). Not thread-safe: one owner at a time.
final class PGConnection {
    private let handle: OpaquePointer

    /// Bounds on a server that stops answering (a cut link gives no reset): a connection
    /// attempt gives up after 10 s, a query whose bytes go unacknowledged after 10 s, an idle
    /// connection is probed after 5 s. Without them a round, and the verbs that wait for it,
    /// would hang for minutes. Anything the connection string sets wins.
    static let defaults: [(String, String)] = [
        ("connect_timeout", "10"), ("tcp_user_timeout", "10000"),
        ("keepalives", "1"), ("keepalives_idle", "5"), ("keepalives_interval", "2"), ("keepalives_count", "3"),
    ]

    /// Connects with a libpq connection string (`PQconnectdbParams`, the string expanded last so
    /// its settings override `defaults`). - Throws: `PostgresError` with libpq's message.
    init(conninfo: String) throws {
        let pairs = Self.defaults + [("dbname", conninfo)]
        let connected: OpaquePointer? = withCStrings(pairs.map(\.0)) { keys in
            withCStrings(pairs.map(\.1)) { values in PQconnectdbParams(keys, values, 1) }
        }
        guard let h = connected else { throw PostgresError(message: "out of memory", state: nil) }
        guard PQstatus(h) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(h)).trimmingTrailingNewlines
            PQfinish(h)
            throw PostgresError(message: message, state: nil)
        }
        // The server's notices ("relation ... already exists, skipping") are not the daemon's to
        // print: libpq's default writes each to standard error.
        PQsetNoticeProcessor(h, { _, _ in }, nil)
        handle = h
    }

    deinit { PQfinish(handle) }

    /// Whether the connection is still usable.
    var isOK: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Runs one statement with out-of-line parameters; results come back in binary format.
    /// - Throws: `PostgresError` with the server's message and SQLSTATE.
    @discardableResult
    func exec(_ sql: String, _ params: [PGValue] = []) throws -> PGResult {
        // Every parameter's bytes in one buffer, so the pointers stay valid through the call.
        var flat: [UInt8] = [0]
        var offsets: [Int?] = []
        var lengths: [Int32] = []
        for p in params {
            let bytes: [UInt8]?
            switch p {
            case .text(let s): bytes = Array(s.utf8) + [0]
            case .bytes(let b): bytes = b
            case .int(let n): bytes = Array(String(n).utf8) + [0]
            case .null: bytes = nil
            }
            offsets.append(bytes.map { _ in flat.count })
            lengths.append(Int32(bytes?.count ?? 0))
            flat += bytes ?? []
        }
        let formats: [Int32] = params.map { if case .bytes = $0 { 1 } else { 0 } }
        let result: OpaquePointer? = flat.withUnsafeBufferPointer { base in
            let start = UnsafeRawPointer(base.baseAddress!).assumingMemoryBound(to: CChar.self)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { $0.map { start + $0 } }
            return PQexecParams(handle, sql, Int32(params.count), nil, pointers, lengths, formats, 1)
        }
        guard let result else { throw PostgresError(message: String(cString: PQerrorMessage(handle)), state: nil) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            PQclear(result)
            throw PostgresError(message: message, state: state)
        }
        return PGResult(result)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    func transaction<R>(_ body: () throws -> R) throws -> R {
        try exec("BEGIN")
        do {
            let r = try body()
            try exec("COMMIT")
            return r
        } catch {
            _ = try? exec("ROLLBACK")
            throw error
        }
    }

    /// The socket, for `poll` while waiting for notifications.
    var socket: Int32 { PQsocket(handle) }

    /// Reads what the server sent and returns the channels notified since the last call
    /// (`PQconsumeInput`, `PQnotifies`). - Throws: `PostgresError` when the connection broke.
    func notifications() throws -> [String] {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(message: String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines, state: nil)
        }
        var out: [String] = []
        while let n = PQnotifies(handle) {
            out.append(String(cString: n.pointee.relname))
            PQfreemem(n)
        }
        return out
    }

    /// Whether a connection string sets a password, which must not travel on a command line
    /// or in the environment (`PQconninfoParse`). - Throws: `PostgresError` when it does not parse.
    static func conninfoHasPassword(_ conninfo: String) throws -> Bool {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &error) else {
            let message = error.map { String(cString: $0).trimmingTrailingNewlines } ?? "cannot parse the connection string"
            if let error { PQfreemem(error) }
            throw PostgresError(message: message, state: nil)
        }
        defer { PQconninfoFree(options) }
        var p = options
        while let keyword = p.pointee.keyword {
            if String(cString: keyword) == "password", let v = p.pointee.val, v.pointee != 0 { return true }
            p += 1
        }
        return false
    }
}

/// A query's rows, in binary format. Owns the libpq result.
final class PGResult {
    private let handle: OpaquePointer
    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { PQclear(handle) }

    var rows: Int { Int(PQntuples(handle)) }
    /// Rows a command changed (`PQcmdTuples`).
    var affected: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) == 1 }

    func bytes(_ row: Int, _ column: Int) -> [UInt8] {
        let n = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard n > 0, let p = PQgetvalue(handle, Int32(row), Int32(column)) else { return [] }
        return UnsafeRawBufferPointer(start: p, count: n).map { $0 }
    }

    /// An `int8` column (binary: eight big-endian bytes); `int4` and `int2` are widened.
    func int(_ row: Int, _ column: Int) -> Int64 {
        let b = bytes(row, column)
        let v = b.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        switch b.count {
        case 2: return Int64(Int16(truncatingIfNeeded: v))
        case 4: return Int64(Int32(truncatingIfNeeded: v))
        default: return Int64(bitPattern: v)
        }
    }

    func bool(_ row: Int, _ column: Int) -> Bool { bytes(row, column).first == 1 }

    func text(_ row: Int, _ column: Int) -> String { String(decoding: bytes(row, column), as: UTF8.self) }
}

/// `strings` as a NULL-terminated array of C strings, valid during `body`.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { string in
        let bytes = string.utf8CString
        let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
        bytes.withUnsafeBufferPointer { copy.initialize(from: $0.baseAddress!, count: bytes.count) }
        return copy
    }
    defer { copies.forEach { $0.deallocate() } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

extension String {
    var trimmingTrailingNewlines: String {
        var s = self
        while s.hasSuffix("\n") { s.removeLast() }
        return s
    }
}
