import CSQLite

/// What a connection calls after each transaction it commits (`Connection.afterEachCommit`).
final class CommitHook: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }

    /// SQLite's own automatic checkpoint threshold (`wal_autocheckpoint`'s default): the WAL
    /// hook replaces that checkpoint, so the hook does it.
    static let checkpointFrames: Int32 = 1000

    /// `sqlite3_wal_hook`'s callback: runs after the commit is in the WAL and the write lock
    /// is released, so whatever `body` lets start next sees the commit.
    static let callback: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = {
        context, db, name, frames in
        if let context { Unmanaged<CommitHook>.fromOpaque(context).takeUnretainedValue().body() }
        if frames >= checkpointFrames { sqlite3_wal_checkpoint(db, name) }
        return SQLITE_OK
    }
}

extension Connection {
    /// Calls `body` after each transaction this connection commits in WAL mode, once the
    /// commit is visible to new read transactions; then checkpoints as SQLite's automatic
    /// checkpoint would (the hook takes its place). One hook per connection; a second replaces it.
    public func afterEachCommit(_ body: @escaping @Sendable () -> Void) {
        let hook = CommitHook(body)
        sqlite3_wal_hook(handle, CommitHook.callback, Unmanaged.passUnretained(hook).toOpaque())
        commitHook = hook
    }

    /// Whether a transaction is open (`sqlite3_get_autocommit` is 0).
    public var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Opens a read transaction that stays open across statements: every search on this
    /// connection then reads the same snapshot, with no lock taken or released per statement,
    /// until `endReadSnapshot`. - Throws: `SQLiteError`.
    public func beginReadSnapshot() throws {
        try prepare(Self.begin).run()
    }

    /// Ends the transaction `beginReadSnapshot` opened. - Throws: `SQLiteError` (a statement
    /// still running keeps the transaction open).
    public func endReadSnapshot() throws {
        try prepare(Self.commit).run()
    }

    private static let begin = StaticSQL("BEGIN")
    private static let commit = StaticSQL("COMMIT")
}
