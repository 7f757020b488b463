import Glibc
import KeychainCore
import KeychainProtocol

/// What one caller may cost the daemon (PRODUCT 11). The vault's owner and root are counted but
/// never refused by these caps, and keep slow-request workers of their own.
struct ServerLimits: Sendable {
    /// Open connections per uid. Idle ones cost a descriptor and a few hundred bytes.
    var connectionsPerUID = 1024
    /// Open connections of all other uids together; leaves descriptors for the owner and root.
    var connectionsOfOthers = 4096
    /// Guarded bytes of frames being received, and replies not yet taken, per uid.
    var pendingBytesPerUID = 2 * Frame.maximumLength
    /// The same, for all other uids together.
    var pendingBytesOfOthers = 6 * Frame.maximumLength
    /// Slow requests (passphrase checks, approvals, mounts, locks) queued or running per uid.
    var slowRequestsPerUID = 8
    /// Seconds a frame may take from its first byte to its last, and a reply to be taken.
    var frameDeadline = 10.0
    /// Microseconds an event thread waits awake for the owner's or root's next request on a
    /// connection it just answered (0: never). Other uids' connections always go back to epoll.
    var awakeMicros = 60
    /// Threads that wait for the sockets and answer the fast requests. A thread that waits
    /// awake for a connection's next request serves that connection alone meanwhile, so there
    /// are as many as the busy clients a machine commonly has (8 lookup loops on 2 cores: 0.6x
    /// the C floor with 8 threads, 0.35-0.5x with 4; bench/analysis.md, 2026-12-07).
    var eventThreads = 8
    /// Workers for slow requests: shared by every uid (one running per uid at a time), and
    /// reserved for the owner and root.
    var slowWorkers = 4
    var privilegedSlowWorkers = 2
    let ownerUID: UInt32

    static func standard(ownerUID: UInt32) -> ServerLimits {
        var limits = ServerLimits(ownerUID: ownerUID)
        // Descriptors: raise the soft limit to the hard one, and keep 256 for the vault, the
        // mounts, the owner and root.
        var rl = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl) == 0 {
            if rl.rlim_cur < rl.rlim_max {
                rl.rlim_cur = rl.rlim_max
                _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl)
                _ = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl)
            }
            let usable = Int(min(rl.rlim_cur, 1 << 20))
            limits.connectionsOfOthers = max(64, min(limits.connectionsOfOthers, usable - 256))
            limits.connectionsPerUID = min(limits.connectionsPerUID, limits.connectionsOfOthers)
        }
        return limits
    }

    /// The vault's owner and root: always served.
    func isPrivileged(uid: UInt32) -> Bool { uid == 0 || uid == ownerUID }
}
