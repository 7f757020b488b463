import Glibc

/// A value reachable only with its lock held, and a condition to wait on until another thread
/// changes it: what `Synchronization.Mutex<State>` is, plus waiting, which it lacks.
///
/// A pthread mutex and condition must stay at the address they were initialised at, and a
/// stored property of a Swift type has no stable address (`&property` may be a temporary
/// copy), so both are allocated here once and never move. The condition waits on the
/// monotonic clock: a change of the wall clock neither shortens nor stretches a timed wait.
public final class ConditionLock<State: Sendable>: @unchecked Sendable {
    // Unchecked: a pthread mutex and condition allocated once; `state` is touched only with the mutex locked.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var state: State

    /// What `wait` is told after each look at the state.
    public enum Decision<Result> {
        /// Stop waiting: `wait` returns this.
        case done(Result)
        /// Wait until another thread wakes the waiters (`withLockWakingWaiters`).
        case wait
        /// Wait until woken, or until the monotonic clock reads `seconds`
        /// (`SystemClock.monotonic()` in seconds); a time past any clock's (infinity, or
        /// beyond 10^12 seconds) waits until woken.
        case waitUntil(seconds: Double)
    }

    public init(_ initial: State) {
        state = initial
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` on the state with the lock held (pthread_mutex_lock). Not recursive: a body
    /// that takes the same lock again never returns.
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Runs `body` with the lock held, then wakes every waiter (pthread_cond_broadcast), also
    /// when `body` throws: each looks at the state again.
    public func withLockWakingWaiters<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return try body(&state)
    }

    /// With the lock held, asks `decide` about the state until it is `.done`; between asks the
    /// lock is let go while the thread waits (pthread_cond_wait, pthread_cond_timedwait). A
    /// wait may also end early (a spurious wake-up), so `decide` looks at the state each time
    /// rather than trusting that it changed.
    public func wait<R>(_ decide: (inout State) -> Decision<R>) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            switch decide(&state) {
            case .done(let result):
                return result
            case .waitUntil(let seconds) where seconds < 1e12:
                let whole = seconds.rounded(.down)
                var deadline = timespec(tv_sec: Int(whole), tv_nsec: min(999_999_999, Int((seconds - whole) * 1e9)))
                pthread_cond_timedwait(condition, mutex, &deadline)
            case .wait, .waitUntil:
                pthread_cond_wait(condition, mutex)
            }
        }
    }
}
