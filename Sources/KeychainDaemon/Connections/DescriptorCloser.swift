import CProcess
import Glibc
import KeychainSystem
import KeychainCore
import Synchronization

/// Closes descriptors that callers passed and the daemon will not use, on a thread of its own.
/// Closing a file calls its file system's FLUSH, and a FUSE file system may never answer: that
/// close must not run on a thread anyone else waits for. Only callers that may pass a descriptor
/// at all (the owner and root, for a mount's /dev/fuse) can bring one here; strangers' never
/// enter the daemon (`Connection.receiveBytes`).
final class DescriptorCloser: Sendable {
    /// Descriptors waiting for the closer; past this, `dispose` says no and the connection that
    /// brought one is dropped (the descriptor is still closed in its turn).
    static let capacity = 64

    private struct State {
        var pending: [Int32] = []
        var stopped = false
    }
    private let state = Mutex(State())
    /// Counts what was queued; the closer sleeps on it.
    private let wake: EventCounter

    init() throws {
        do { wake = try EventCounter() } catch { throw KeychainStatus.io }
        guard spawnThread("kcfs-closer", { [self] in run() }) else {
            wake.close()
            throw KeychainStatus.internalComponent
        }
    }

    /// Queues `fd` to be closed. False when the queue is full: the caller should drop the
    /// connection that keeps passing them.
    func dispose(_ fd: Int32) -> Bool {
        let room = state.withLock { s -> Bool in
            s.pending.append(fd)
            return s.pending.count <= Self.capacity
        }
        wake.signal()
        return room
    }

    /// Ends the thread once it is not stuck in a close (a stuck one is left behind: the
    /// process's exit ends it).
    func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }

    private func run() {
        while true {
            wake.drain()
            let (batch, stopped) = state.withLock { s -> ([Int32], Bool) in
                defer { s.pending = [] }
                return (s.pending, s.stopped)
            }
            for fd in batch { Glibc.close(fd) }
            if stopped { break }
        }
        wake.close()
    }
}
