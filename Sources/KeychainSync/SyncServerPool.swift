import KeychainCore
import KeychainSystem

/// The connections the rounds of one process's engines take turns on (docs/sync.md,
/// "Connections"): at most `limit` open per connection string, each lent to one round at a
/// time and closed once unused for `idleSeconds`. A round waits for one when all are lent, so
/// the server's backends stay at `limit` however many engines the process runs.
public final class SyncServerPool: Sendable {
    /// The pool of this process's daemon: it syncs one vault, whose rounds and verbs take
    /// one connection at a time; kept while rounds come every 2 s.
    public static let process = SyncServerPool(limit: 4, idleSeconds: 10)

    let limit: Int
    let idleSeconds: Double
    private let state = ConditionLock(Servers())

    private struct Servers: Sendable {
        /// Open and lent, per connection string.
        var open: [String: Int] = [:]
        var idle: [String: [(server: SyncServer, since: Double)]] = [:]
    }

    /// - Parameters:
    ///   - limit: connections per connection string, at least 1.
    ///   - idleSeconds: how long an unused connection stays open.
    public init(limit: Int, idleSeconds: Double) {
        self.limit = max(1, limit)
        self.idleSeconds = idleSeconds
    }

    /// A connection for one round, the most recently used first; waits while `limit` are lent.
    /// - Throws: `PostgresError` when a new connection cannot be made.
    func borrow(_ conninfo: String) throws -> SyncServer {
        let reused: SyncServer? = state.wait { s in
            while let last = s.idle[conninfo]?.popLast() {
                if last.server.db.isOK { return .done(last.server) }
                s.open[conninfo, default: 1] -= 1
            }
            guard s.open[conninfo, default: 0] < limit else { return .wait }
            s.open[conninfo, default: 0] += 1  // the place is taken before connecting, outside the lock
            return .done(nil)
        }
        if let reused { return reused }
        do {
            let server = try SyncServer(conninfo: conninfo)
            try server.upgradeSchema()
            return server
        } catch {
            state.withLockWakingWaiters { $0.open[conninfo, default: 1] -= 1 }
            throw error
        }
    }

    /// Closes a connection after a server error, as a held one would be: the next round
    /// connects again (to the standby that took over, say).
    func discard(_ server: SyncServer) {
        state.withLockWakingWaiters { $0.open[server.conninfo, default: 1] -= 1 }
    }

    /// Takes a connection back after a round; a broken one is closed.
    func giveBack(_ server: SyncServer) {
        let conninfo = server.conninfo
        state.withLockWakingWaiters { s in
            if server.db.isOK {
                s.idle[conninfo, default: []].append((server, monotonicSeconds()))
            } else {
                s.open[conninfo, default: 1] -= 1
            }
        }
    }

    /// Closes the connections unused for `idleSeconds`. - Returns: how many are still open.
    @discardableResult
    func closeIdle() -> Int {
        let now = monotonicSeconds()
        var closing: [SyncServer] = []  // closed after the lock is let go: PQfinish talks to the server
        let open: Int = state.withLockWakingWaiters { s in
            for (conninfo, idle) in s.idle {
                let (stale, fresh) = (idle.filter { now - $0.since >= idleSeconds }, idle.filter { now - $0.since < idleSeconds })
                closing += stale.map(\.server)
                s.idle[conninfo] = fresh
                s.open[conninfo, default: stale.count] -= stale.count
            }
            return s.open.values.reduce(0, +)
        }
        closing.removeAll()
        return open
    }
}
