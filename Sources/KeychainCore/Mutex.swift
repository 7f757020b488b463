import KeychainSystem

/// A lock around a body of code; the vault serialises every write through one. A pthread mutex
/// (`KeychainSystem.Locked`): its waiters sleep rather than spin, and ThreadSanitizer sees it
/// (it cannot follow `Synchronization.Mutex`'s futex slow path, and reported accesses under it
/// as races). Not recursive: a body that takes the same lock again never returns.
public final class PThreadMutex: Sendable {
    private let mutex = Locked<Void>(())

    public init() {}

    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        try mutex.withLock { try body() }
    }
}

/// Seconds since 2001-01-01 00:00:00 UTC, Apple's absolute time.
func absoluteTimeNow() -> Double { AbsoluteTime.now() }
