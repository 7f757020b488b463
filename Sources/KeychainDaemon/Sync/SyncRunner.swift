import Glibc
import KeychainCore
import KeychainSync

/// Runs fleet sync inside the daemon (docs/sync.md): a thread that runs a round of the
/// engine when a local change kicks it, when the server notifies a write, and every few
/// seconds otherwise (`SyncLoop`). Its rounds borrow from the process's connection pool and
/// the process's one LISTEN connection wakes it. Changes it applies go through
/// `Daemon.itemsChanged` like any other, so mounts and watchers see them.
final class SyncRunner: Sendable {
    private let loop: SyncLoop
    var engine: SyncEngine { loop.engine }

    init(vault: Vault, log: @escaping @Sendable (String) -> Void, applied: @escaping SyncEngine.Applied) {
        // A password comes from libpq's passfile only: never from the environment, which
        // other processes of the user can read (docs/cli.md). Before the daemon's threads start.
        unsetenv("PGPASSWORD")
        loop = SyncLoop(vault: vault, connections: .process, log: log, onApplied: applied)
    }

    /// Starts the thread; false when it cannot (the daemon serves without sync then).
    @discardableResult
    func start() -> Bool {
        guard loop.canRun else { return false }
        return spawnThread("kcfs-sync") { [loop] in loop.run() }
    }

    /// A local change or a verb: run a round soon.
    func kick() { loop.kick() }
}
