import KeychainfsAccess
import KeychainFS

/// What the daemon's requests share besides the vault, kept together behind one mutex
/// (`Daemon.state`): every field is read and written in short sections, never across a call
/// into a mount or a program (a group change saves its table to the vault under it).
struct DaemonState {
    var groupTable: AccessGroupTable {
        didSet { contexts.removeAll(keepingCapacity: true) }
    }
    /// Request contexts made for recent callers from `groupTable` (`Daemon.context(for:)`), at
    /// most `contextLimit`; emptied whenever the table changes, so none outlives its groups.
    var contexts: [RequestContext] = []
    static let contextLimit = 16
    /// Monotonic seconds of the last request of an entitled caller (the idle lock counts from it).
    var lastActivity: Double
    /// Seconds of inactivity after which the vault locks; 0 never.
    var idleTimeout: Int
    var mounts: [MountServer] = []
    /// Opened at the first unlock on a machine where the index key was not yet available.
    var auditLog: AuditLog?
}
