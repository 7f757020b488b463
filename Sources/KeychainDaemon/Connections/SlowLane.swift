import CProcess
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainSystem

/// Workers for requests that wait: passphrase checks and their back-off, approval programs,
/// mounts, locks, backups. An event thread hands such a request over and goes back to the
/// sockets, so no caller can occupy the threads that answer everyone's lookups.
///
/// Fairness: tasks run in arrival order, but at most one task per uid at a time (except for the
/// vault's owner and root), and some workers take only the owner's and root's tasks, so they
/// are never queued behind another uid. A task may ask to run again later (a back-off that has
/// not passed): it waits in the queue, holding no thread.
final class SlowLane: Sendable {
    struct Task: Sendable {
        let connection: Connection
        /// Runs the task on a worker; returns a time (monotonic seconds) to run again at, or nil.
        let run: @Sendable (_ scratch: WorkerScratch) -> Double?
        var notBefore: Double = 0
    }

    /// What the workers share: the queue, who runs now, whether to end.
    private struct State: Sendable {
        var queue: [Task] = []
        /// uids (other than the privileged) with a task running now.
        var running: Set<UInt32> = []
        var stopping = false
    }

    private let limits: ServerLimits
    /// A pthread mutex and condition allocated once (`ConditionLock`) rather than a `Mutex`:
    /// workers sleep until a task comes or a back-off ends, `Mutex` has no condition to wait
    /// on, and a futex or eventfd beside one would redo what pthread_cond_timedwait does.
    private let state = ConditionLock(State())

    init(limits: ServerLimits) {
        self.limits = limits
    }

    /// - Throws: `KeychainStatus.internalComponent` when a worker thread cannot be started.
    func start() throws {
        for i in 0..<limits.slowWorkers {
            guard spawnThread("kcfs-slow-\(i)", { [self] in work(privilegedOnly: false) }) else { throw KeychainStatus.internalComponent }
        }
        for i in 0..<limits.privilegedSlowWorkers {
            guard spawnThread("kcfs-owner-\(i)", { [self] in work(privilegedOnly: true) }) else { throw KeychainStatus.internalComponent }
        }
    }

    func submit(_ task: Task) {
        state.withLockWakingWaiters { $0.queue.append(task) }
    }

    /// Workers end once the queue holds nothing they may run (an in-process server's `stop`).
    func stop() {
        state.withLockWakingWaiters { $0.stopping = true }
    }

    private func work(privilegedOnly: Bool) {
        guard let scratch = try? WorkerScratch() else { return }
        while true {
            guard var task = next(privilegedOnly: privilegedOnly) else { return }
            let uid = task.connection.caller.uid
            let again = task.run(scratch)
            state.withLockWakingWaiters { s in
                s.running.remove(uid)
                if let again {
                    task.notBefore = again
                    s.queue.append(task)
                }
            }
        }
    }

    /// Waits for the first task this worker may run now.
    private func next(privilegedOnly: Bool) -> Task? {
        state.wait { s -> ConditionLock<State>.Decision<Task?> in
            let now = monotonicSeconds()
            var earliest = Double.infinity
            for (i, t) in s.queue.enumerated() {
                let uid = t.connection.caller.uid
                let privileged = limits.isPrivileged(uid: uid)
                guard privileged || (!privilegedOnly && !s.running.contains(uid)) else { continue }
                if t.notBefore > now { earliest = min(earliest, t.notBefore); continue }
                if !privileged { s.running.insert(uid) }
                return .done(s.queue.remove(at: i))
            }
            if s.stopping { return .done(nil) }
            return .waitUntil(seconds: earliest)
        }
    }
}

/// A thread's guarded receive buffer: requests land here before they have a buffer of their own.
final class WorkerScratch {
    static let size = 64 << 10
    let bytes: SecureBytes
    /// An event thread's, which may keep a connection awake for its next request.
    let onEventThread: Bool
    /// The connection this event thread waits for next, awake (`ConnectionServer.serveAwake`).
    var awake: Connection?

    init(onEventThread: Bool = false) throws {
        self.onEventThread = onEventThread
        bytes = try SecureBytes(count: WorkerScratch.size)
    }
}

/// Starts a detached thread that runs `body` (the daemon's threads live as long as it does).
/// Returns false when the system refuses a thread.
@discardableResult
func spawnThread(_ name: String, _ body: @escaping () -> Void) -> Bool {
    final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }
    let context = Unmanaged.passRetained(Box({ kcfs_name_thread(name); body() })).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, context)
    guard rc == 0 else {
        Unmanaged<Box>.fromOpaque(context).release()
        return false
    }
    pthread_detach(thread)
    return true
}
