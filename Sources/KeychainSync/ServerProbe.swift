/// What the server spends on its clients, for the fleet benchmark (bench/sync.sh --fleet):
/// its client backends, and which process serves this probe (the server's processes are that
/// one's parent and its children). One connection of its own, not counted.
public final class ServerProbe {
    private let db: PGConnection

    /// - Throws: `PostgresError` when the server cannot be reached.
    public init(conninfo: String) throws {
        db = try PGConnection(conninfo: conninfo)
    }

    /// Client backends of this database now, this probe's own left out (`pg_stat_activity`).
    public func clientBackends() throws -> Int {
        Int(try db.exec("""
            SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
                AND datname = current_database()
            """).int(0, 0))
    }

    /// The process id of this probe's backend (`pg_backend_pid()`).
    public func backendPID() throws -> Int32 {
        Int32(truncatingIfNeeded: try db.exec("SELECT pg_backend_pid()").int(0, 0))
    }
}
