import KeychainModel
import KeychainfsAccess
import KeychainProtocol

/// What one D-Bus caller may reach through this service: the access groups its own identity is
/// entitled to by the vault's group table (`AccessGroup.entitles`, the rule the daemon applies
/// to a socket caller), among the groups this process itself is entitled to.
struct CallerAccess {
    /// The caller's uid (for per-user bounds).
    var uid: UInt32
    /// Groups whose items the caller sees, in the table's order (the first is `default`).
    var readable: [String]
    /// Groups whose items the caller may add, change and delete.
    var writable: Set<String>
    /// Groups this process is served by the daemon: a path naming one of them that the caller
    /// may not read is refused (AccessDenied), any other is no object at all.
    var served: Set<String>
    /// Root, the vault's owner, or a caller of a group that grants locking.
    var mayLock: Bool

    /// - Parameters:
    ///   - caller: the identity the bus pinned for the caller's connection.
    ///   - table: the vault's groups as the daemon lists them to this process (all of them for
    ///     the vault's owner; none when no group was made, which means one implicit `default`).
    ///   - provider: this process as the daemon sees it; the groups it is entitled to are the
    ///     most any caller gets (the daemon refuses this process the others in any case).
    ///   - owner: the vault's owner (the daemon's uid): administrator, and owner of `default`.
    init(caller: CallerIdentity, table: [AccessGroup], provider: CallerIdentity, owner: UInt32) {
        uid = caller.uid
        let groups = AccessGroupTable(groups: table.isEmpty ? [AccessGroup(name: "default", owner: owner, gid: 0)] : table)
        let served = groups.entitled(provider)
        readable = groups.entitled(caller).filter(served.contains)
        writable = Set(groups.writable(caller).filter(served.contains))
        self.served = Set(served)
        mayLock = caller.uid == 0 || caller.uid == owner || groups.grantsLock(to: caller)
    }

    /// Nothing: the state before the first call is handled.
    static let none = CallerAccess(uid: UInt32.max, readable: [], writable: [], served: [], mayLock: false)

    private init(uid: UInt32, readable: [String], writable: Set<String>, served: Set<String>, mayLock: Bool) {
        self.uid = uid
        self.readable = readable
        self.writable = writable
        self.served = served
        self.mayLock = mayLock
    }

    /// An identity from the bus's credentials. The executable is left unknown: dbus-daemon 1.14
    /// hands out no process handle, and /proc by a pid could name a later process, so groups
    /// restricted to executables are not served over D-Bus (fail closed).
    static func identity(_ c: BusCredentials) -> CallerIdentity {
        CallerIdentity(pid: Int32(bitPattern: c.pid ?? 0), uid: c.uid, gid: c.groups.first ?? UInt32.max,
                       groups: Set(c.groups), executable: nil)
    }
}
