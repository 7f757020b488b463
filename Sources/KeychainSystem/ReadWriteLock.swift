import Glibc

/// Many readers or one writer (`pthread_rwlock_t`). Writers go first: once one waits, new
/// readers wait behind it (`PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`), so a steady stream
/// of searches cannot keep a lock from wiping the keys. Hence a reader must never take the read
/// side again while it holds it: with a writer waiting in between, the second read never returns.
public final class ReadWriteLock: @unchecked Sendable {
    // A pthread lock must not move: it lives in its own allocation, not in a Swift property.
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)

    public init() {
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        defer { pthread_rwlockattr_destroy(&attributes) }
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        lock.initialize(to: pthread_rwlock_t())
        precondition(pthread_rwlock_init(lock, &attributes) == 0)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    public func withReadLock<R>(_ body: () throws -> R) rethrows -> R {
        // EAGAIN (too many readers) and EDEADLK (this thread writes) are bugs here, not states.
        precondition(pthread_rwlock_rdlock(lock) == 0)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    public func withWriteLock<R>(_ body: () throws -> R) rethrows -> R {
        precondition(pthread_rwlock_wrlock(lock) == 0)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
