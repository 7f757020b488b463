import KeychainSystem

/// A descriptor received over the socket, closed when the last holder lets go of it, so a
/// request that does not use it (or fails) never leaves it open in the daemon.
public final class PassedDescriptor: @unchecked Sendable {
    private var fd: Int32

    public init(_ fd: Int32) { self.fd = fd }

    deinit { if fd >= 0 { try? FileDescriptor(rawValue: fd).close() } }

    /// Hands the descriptor over: the caller closes it from now on. -1 once taken.
    public func take() -> Int32 {
        defer { fd = -1 }
        return fd
    }

    /// The descriptor, still owned by this object.
    public var value: Int32 { fd }
}
