import CProcess
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto

/// Workers for requests that wait: passphrase checks and their back-off, approval programs,
/// mounts, locks, backups. An event thread hands such a request over and goes back to the
/// sockets, so no caller can occupy the threads that answer everyone's lookups.
///
/// Fairness: tasks run in arrival order, but at most one task per uid at a time (except for the
/// vault's owner and root), and some workers take only the owner's and root's tasks, so they
/// are never queued behind another uid. A task may ask to run again later (a back-off that has
/// not passed): it waits in the queue, holding no thread.
final class SlowLane: @unchecked Sendable {
    struct Task {
        let connection: Connection
        /// Runs the task on a worker; returns a time (monotonic seconds) to run again at, or nil.
        let run: (_ scratch: WorkerScratch) -> Double?
        var notBefore: Double = 0
    }

    private let limits: ServerLimits
    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()
    private var queue: [Task] = []
    /// uids (other than the privileged) with a task running now.
    private var running: Set<UInt32> = []
    private var stopping = false

    init(limits: ServerLimits) {
        self.limits = limits
        pthread_mutex_init(&mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(&condition, &attr)
        pthread_condattr_destroy(&attr)
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
        pthread_mutex_lock(&mutex)
        queue.append(task)
        pthread_cond_broadcast(&condition)
        pthread_mutex_unlock(&mutex)
    }

    /// Workers end once the queue holds nothing they may run (an in-process server's `stop`).
    func stop() {
        pthread_mutex_lock(&mutex)
        stopping = true
        pthread_cond_broadcast(&condition)
        pthread_mutex_unlock(&mutex)
    }

    private func work(privilegedOnly: Bool) {
        guard let scratch = try? WorkerScratch() else { return }
        while true {
            guard var task = next(privilegedOnly: privilegedOnly) else { return }
            let uid = task.connection.caller.uid
            let again = task.run(scratch)
            pthread_mutex_lock(&mutex)
            running.remove(uid)
            if let again {
                task.notBefore = again
                queue.append(task)
            }
            pthread_cond_broadcast(&condition)
            pthread_mutex_unlock(&mutex)
        }
    }

    /// Waits for the first task this worker may run now.
    private func next(privilegedOnly: Bool) -> Task? {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        while true {
            let now = monotonicSeconds()
            var earliest = Double.infinity
            for (i, t) in queue.enumerated() {
                let uid = t.connection.caller.uid
                let privileged = limits.isPrivileged(uid: uid)
                guard privileged || (!privilegedOnly && !running.contains(uid)) else { continue }
                if t.notBefore > now { earliest = min(earliest, t.notBefore); continue }
                if !privileged { running.insert(uid) }
                return queue.remove(at: i)
            }
            if stopping { return nil }
            if earliest.isFinite {
                var ts = timespec(tv_sec: Int(earliest), tv_nsec: Int((earliest - earliest.rounded(.down)) * 1e9))
                pthread_cond_timedwait(&condition, &mutex, &ts)
            } else {
                pthread_cond_wait(&condition, &mutex)
            }
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
