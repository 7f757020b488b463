import KeychainModel
import KeychainSystem

/// Unix-domain stream sockets as the daemon and its clients use them: listening, connecting
/// and peer credentials, with failures as keychain statuses.
public enum UnixSocket {
    /// The kernel's view of a connected peer (`SO_PEERCRED`).
    public typealias PeerCredentials = KeychainSystem.PeerCredentials

    /// Binds and listens at `path` with the given mode. A stale socket file is replaced.
    /// `refusingDescriptors`: peers may not pass descriptors to the sockets it accepts (a
    /// sender's SCM_RIGHTS fails with EPERM) until one is allowed to; kernels before 6.16 have
    /// no such setting, and the receiver then makes no room for them instead.
    /// - Throws: `KeychainStatus.param` for a path too long for a socket, else `.io`.
    public static func listen(at path: String, mode: UInt32, refusingDescriptors: Bool = false) throws -> Int32 {
        guard FileDescriptor.fitsUnixAddress(path) else { throw KeychainStatus.param }
        let fd: FileDescriptor
        do { fd = try .unixStreamSocket() } catch { throw KeychainStatus.io }
        do {
            try? FileSystem.remove(path)
            try fd.bind(unixPath: path)
            try FileSystem.setPermissions(of: path, to: FilePermissions(rawValue: mode))
            if refusingDescriptors {
                do { try fd.setAcceptsDescriptors(false) } catch where error == .protocolNotAvailable {}
            }
            try fd.listen(backlog: 64)
        } catch {
            try? fd.close()
            throw KeychainStatus.io
        }
        return fd.rawValue
    }

    /// Connects to `path`; nil when nothing listens there.
    /// - Throws: `KeychainStatus.param` for a path too long for a socket, else `.io`.
    public static func connect(to path: String) throws -> Int32? {
        guard FileDescriptor.fitsUnixAddress(path) else { throw KeychainStatus.param }
        let fd: FileDescriptor
        do { fd = try .unixStreamSocket() } catch { throw KeychainStatus.io }
        do {
            try fd.connect(unixPath: path)
        } catch {
            try? fd.close()
            if error == .noSuchFile || error == .connectionRefused { return nil }
            throw KeychainStatus.io
        }
        return fd.rawValue
    }

    /// The peer's pid, uid and gid as the kernel recorded them at connect time.
    public static func peerCredentials(_ fd: Int32) throws -> PeerCredentials {
        do { return try FileDescriptor(rawValue: fd).peerCredentials() } catch { throw KeychainStatus.io }
    }
}
