/// How an engine reaches the server (docs/sync.md, "Connections").
public struct SyncConnections: Sendable {
    let pool: SyncServerPool?
    let waker: SyncWaker?

    /// Each engine holds a connection for its rounds and one that LISTENs, for as long as it
    /// runs: two backends per vault. Before issue 32; kept for the fleet benchmark's comparison.
    public static let held = SyncConnections(pool: nil, waker: nil)

    /// The daemon's: rounds borrow from this process's pool, one LISTEN connection wakes them.
    public static let process = SyncConnections(pool: .process, waker: .process)

    /// Rounds borrow from `pool`; `waker`'s LISTEN connection wakes the engine.
    public static func shared(pool: SyncServerPool, waker: SyncWaker) -> SyncConnections {
        SyncConnections(pool: pool, waker: waker)
    }
}
