import Glibc
import KeychainModel

/// Unix-domain stream sockets: the C interop for listening, connecting and peer credentials.
public enum UnixSocket {
    /// The kernel's view of a connected peer (`SO_PEERCRED`).
    public struct PeerCredentials: Sendable, Equatable {
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32
    }

    private static func address(_ path: String) throws -> (sockaddr_un, socklen_t) {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else { throw KeychainStatus.param }
        withUnsafeMutableBytes(of: &addr.sun_path) { dst in
            for (i, b) in bytes.enumerated() { dst[i] = b }
            dst[bytes.count] = 0
        }
        return (addr, socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1))
    }

    /// Binds and listens at `path` with the given mode. A stale socket file is replaced.
    public static func listen(at path: String, mode: mode_t) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeychainStatus.io }
        var (addr, len) = try address(path)
        unlink(path)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
        }
        guard bound == 0, chmod(path, mode) == 0, Glibc.listen(fd, 64) == 0 else {
            close(fd)
            throw KeychainStatus.io
        }
        return fd
    }

    /// Connects to `path`; nil when nothing listens there.
    public static func connect(to path: String) throws -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeychainStatus.io }
        var (addr, len) = try address(path)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, len) }
        }
        if rc != 0 {
            close(fd)
            if errno == ENOENT || errno == ECONNREFUSED { return nil }
            throw KeychainStatus.io
        }
        return fd
    }

    /// The peer's pid, uid and gid as the kernel recorded them at connect time.
    public static func peerCredentials(_ fd: Int32) throws -> PeerCredentials {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }: Glibc hides it behind _GNU_SOURCE,
        // and a tuple has the same C layout.
        var cred: (Int32, UInt32, UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 else { throw KeychainStatus.io }
        return PeerCredentials(pid: cred.0, uid: cred.1, gid: cred.2)
    }
}
