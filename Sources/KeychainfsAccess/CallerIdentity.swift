/// Who is calling, as the kernel reports it: never what the caller says about itself. Socket
/// callers are pinned at connect (KeychainDaemon's `PinnedIdentity`), FUSE requesters read from
/// /proc while their request is served (KeychainFS).
public struct CallerIdentity: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Primary and supplementary groups.
    public var groups: Set<UInt32>
    /// The executable; nil when it cannot be read or could belong to another process.
    public var executable: String?

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: Set<UInt32>, executable: String?) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.executable = executable
    }
}
