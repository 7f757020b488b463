import Glibc

/// A value reachable only while a pthread mutex is held (`pthread_mutex_lock`, default kind: a
/// waiter that finds it taken sleeps in the kernel at once), as swift-nio's `NIOLockedValueBox`.
///
/// For the locks of the read path, which many threads take for a few instructions on few cores:
/// this toolchain's `Synchronization.Mutex` (a priority-inheriting futex) spins before it
/// sleeps, and with more runnable threads than cores a spinning waiter takes the CPU the holder
/// needs to finish. Searches from 8 threads on 2 cores spent half their CPU time spinning in it
/// (bench/analysis.md, 2026-12-03). `body` must not take the same lock again.
public final class Locked<State>: @unchecked Sendable {
    // A pthread mutex must not move: it lives in its own allocation, not in a Swift property.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    // The mutex gives each body sole access, so Swift's run-time exclusivity check (a
    // thread-local look-up per access) is left out.
    @exclusivity(unchecked) private var state: State

    public init(_ state: State) {
        self.state = state
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}

extension Locked where State == Void {
    /// The lock alone, for a body that guards state kept elsewhere (`PThreadMutex`).
    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
