import KeychainSystem
import KeychainfsAccess

extension CallerIdentity {
    /// Completes the pid, uid and gid of a FUSE request with the process's groups and executable
    /// from /proc. The requester is blocked in its system call while the request is served, so
    /// its pid cannot be reused meanwhile. Socket callers are pinned at connect instead
    /// (KeychainDaemon's `PinnedIdentity`), since a socket outlives the process that opened it.
    static func of(pid: Int32, uid: UInt32, gid: UInt32) -> CallerIdentity {
        CallerIdentity(pid: pid, uid: uid, gid: gid, groups: ProcessFiles.supplementaryGroups(of: pid).union([gid]),
                       executable: ProcessFiles.executable(of: pid))
    }
}
