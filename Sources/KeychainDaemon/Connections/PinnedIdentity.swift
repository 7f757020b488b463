import CProcess
import Glibc
import KeychainfsAccess
import KeychainProtocol
import KeychainSystem

/// The identity of a socket's peer, taken from the kernel once, when the connection is
/// accepted, and never again from `/proc` by a pid that could by then name another process.
///
/// uid, gid and pid come from `SO_PEERCRED` and the supplementary groups from `SO_PEERGROUPS`,
/// both recorded by the kernel at `connect(2)`. The executable is read through the pid while a
/// pidfd (`SO_PEERPIDFD`) proves that the pid still names the process that connected: when that
/// process is gone, or the kernel gives no pidfd, the executable is unknown (nil), and groups
/// restricted to executables do not entitle the caller.
enum PinnedIdentity {
    static func of(socket fd: Int32) -> CallerIdentity? {
        guard let cred = try? UnixSocket.peerCredentials(fd) else { return nil }
        guard let supplementary = peerGroups(fd) else { return nil }
        return CallerIdentity(pid: cred.pid, uid: cred.uid, gid: cred.gid,
                              groups: Set(supplementary).union([cred.gid]),
                              executable: FileDescriptor(rawValue: fd).peerExecutable(pid: cred.pid))
    }

    private static func peerGroups(_ fd: Int32) -> [UInt32]? {
        var capacity = 64
        while true {
            var groups = [gid_t](repeating: 0, count: capacity)
            let n = Int(kcfs_peer_groups(fd, &groups, Int32(capacity)))
            if n < 0 { return nil }
            if n <= capacity { return Array(groups[0..<n]) }
            capacity = n
        }
    }
}
