import Glibc
import KeychainCore
import KeychainSync
import Synchronization

/// Runs fleet sync inside the daemon (docs/sync.md): a thread that runs a round of the
/// engine when a local change kicks it, when the server notifies a write, and every few
/// seconds otherwise. Changes it applies go through `Daemon.itemsChanged` like any other, so
/// mounts and watchers see them.
final class SyncRunner: Sendable {
    /// The longest wait between rounds: a notification lost with a dropped connection is
    /// made up for by this.
    static let idleRound: Int32 = 2000
    let engine: SyncEngine
    /// The pipe that wakes the thread, made by `start`: -1 before.
    private let wakeRead = Atomic<Int32>(-1)
    private let wakeWrite = Atomic<Int32>(-1)

    init(vault: Vault, log: @escaping @Sendable (String) -> Void, applied: @escaping SyncEngine.Applied) {
        // A password comes from libpq's passfile only: never from the environment, which
        // other processes of the user can read (docs/cli.md). Before the daemon's threads start.
        unsetenv("PGPASSWORD")
        engine = SyncEngine(vault: vault, log: log, onApplied: applied)
    }

    /// Starts the thread; false when it cannot (the daemon serves without sync then).
    @discardableResult
    func start() -> Bool {
        var pair: [Int32] = [-1, -1]
        guard pipe(&pair) == 0 else { return false }
        for fd in pair {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead.store(pair[0], ordering: .releasing)
        wakeWrite.store(pair[1], ordering: .releasing)
        return spawnThread("kcfs-sync") { [self] in loop() }
    }

    /// A local change or a verb: run a round soon.
    func kick() {
        let fd = wakeWrite.load(ordering: .acquiring)
        guard fd >= 0 else { return }
        var byte: UInt8 = 1
        _ = Glibc.write(fd, &byte, 1)  // a full pipe already means "run"
    }

    private func loop() {
        var scratch = [UInt8](repeating: 0, count: 64)
        let wakeRead = wakeRead.load(ordering: .acquiring)
        while true {
            engine.step()
            var set = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            if let s = engine.notificationSocket, s >= 0 { set.append(pollfd(fd: s, events: Int16(POLLIN), revents: 0)) }
            _ = poll(&set, nfds_t(set.count), Self.idleRound)
            while scratch.withUnsafeMutableBytes({ Glibc.read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
        }
    }
}
