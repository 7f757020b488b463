import Glibc

/// A plain pthread mutex; the vault serialises every operation through one.
public final class PThreadMutex: @unchecked Sendable {
    private var mutex = pthread_mutex_t()

    public init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }

    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }
}

/// Seconds since 2001-01-01 00:00:00 UTC, Apple's absolute time.
func absoluteTimeNow() -> Double { AbsoluteTime.now() }
