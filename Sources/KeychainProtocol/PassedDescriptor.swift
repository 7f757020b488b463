import KeychainSystem
import Synchronization

/// A descriptor received over the socket, closed when the last holder lets go of it, so a
/// request that does not use it (or fails) never leaves it open in the daemon.
public final class PassedDescriptor: Sendable {
    /// -1 once taken: of two threads that take it, one gets the descriptor.
    private let fd: Atomic<Int32>

    public init(_ fd: Int32) { self.fd = Atomic(fd) }

    deinit {
        let fd = fd.load(ordering: .acquiring)
        if fd >= 0 { try? FileDescriptor(rawValue: fd).close() }
    }

    /// Hands the descriptor over: the caller closes it from now on. -1 once taken.
    public func take() -> Int32 { fd.exchange(-1, ordering: .acquiringAndReleasing) }

    /// The descriptor, still owned by this object.
    public var value: Int32 { fd.load(ordering: .acquiring) }
}
