import KeychainSystem
import Synchronization

/// A lock around a body of code; the vault serialises every write through one. The standard
/// library's `Synchronization.Mutex` underneath (a futex on Linux); the name is older than that.
/// Not recursive: a body that takes the same lock again never returns.
public final class PThreadMutex: Sendable {
    private let mutex = Mutex<Void>(())

    public init() {}

    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        try mutex.withLock { _ in try body() }
    }
}

/// Seconds since 2001-01-01 00:00:00 UTC, Apple's absolute time.
func absoluteTimeNow() -> Double { AbsoluteTime.now() }
