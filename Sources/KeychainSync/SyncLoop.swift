import KeychainSystem
import KeychainCore
import Synchronization

/// Runs one engine's rounds on the caller's thread (`run`): when a local change or a verb
/// kicks it, when the server notifies a write to its circle, and every 2 s otherwise (every
/// `sync set --poll` seconds, without notifications, for a host that polls). The
/// daemon runs one on a thread of its own; the fleet benchmark and its test run many.
public final class SyncLoop: Sendable {
    /// The longest wait between rounds: a notification lost with a dropped connection is
    /// made up for by this.
    public static let idleRound: Int32 = 2000
    public let engine: SyncEngine
    private let pipe: WakePipe
    private let stopped = Atomic<Bool>(false)

    public init(vault: Vault, connections: SyncConnections, log: @escaping @Sendable (String) -> Void,
                onApplied: @escaping SyncEngine.Applied) {
        let pipe = WakePipe()
        self.pipe = pipe
        engine = SyncEngine(vault: vault, log: log, onApplied: onApplied, connections: connections, wake: { pipe.poke() })
    }

    /// Whether `run` can wait for kicks (false when no pipe could be made).
    public var canRun: Bool { pipe.isOpen }

    /// A local change, a verb or a notification: run a round soon.
    public func kick() { pipe.poke() }

    /// Runs rounds until `stop`.
    public func run() {
        guard pipe.isOpen else { return }
        while !stopped.load(ordering: .acquiring) {
            engine.step()
            // Held connections: this engine's own LISTEN connection too.
            Poll.waitUntilAnyReadable([pipe.readEnd, engine.notificationSocket ?? -1], timeoutMilliseconds: engine.roundInterval)
            pipe.drain()
        }
        engine.disconnect()
    }

    /// Ends `run` after the round in progress; its connections go back or close.
    public func stop() {
        stopped.store(true, ordering: .releasing)
        pipe.poke()
    }
}
