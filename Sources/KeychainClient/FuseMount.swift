import CProcess
import Glibc
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// The asking side of a mount: it mounts in its own mount namespace and hands the /dev/fuse
/// descriptor to the daemon, so the mount is where the asker (CLI, mount(8), systemd) lives
/// even when the daemon runs in a private namespace. As root with mount(2), as anyone else
/// through fusermount3, which passes the descriptor back over a socketpair (`_FUSE_COMMFD`).
public enum FuseMount {
    public static let fusermount = "/usr/bin/fusermount3"

    /// Mounts a keychainfs at `point` and returns the FUSE device descriptor that serves it.
    /// - Parameter owner: the uid and gid the kernel lets in without `allow_other` (the daemon's).
    /// - Throws: `KeychainStatus.io` when /dev/fuse cannot be opened or the mount is refused.
    public static func mount(at point: String, allowOther: Bool, readOnly: Bool,
                             owner: (uid: UInt32, gid: UInt32)) throws -> Int32 {
        if geteuid() == 0 { return try mountDirectly(point, allowOther: allowOther, readOnly: readOnly, owner: owner) }
        var options = "default_permissions,fsname=keychainfs,subtype=keychainfs"
        if allowOther { options += ",allow_other" }
        if readOnly { options += ",ro" }
        return try mountThroughFusermount(point, options: options)
    }

    private static func mountDirectly(_ point: String, allowOther: Bool, readOnly: Bool,
                                      owner: (uid: UInt32, gid: UInt32)) throws -> Int32 {
        let fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw KeychainStatus.io }
        var data = "fd=\(fd),rootmode=40000,user_id=\(owner.uid),group_id=\(owner.gid),default_permissions"
        if allowOther { data += ",allow_other" }
        var flags = UInt(MS_NOSUID) | UInt(MS_NODEV)
        if readOnly { flags |= UInt(MS_RDONLY) }
        guard Glibc.mount("keychainfs", point, "fuse.keychainfs", flags, data) == 0 else {
            close(fd)
            throw KeychainStatus.io
        }
        return fd
    }

    private static func mountThroughFusermount(_ point: String, options: String) throws -> Int32 {
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw KeychainStatus.io
        }
        defer { close(pair[0]) }
        let spawned = run([fusermount, "-o", options, "--", point], passing: pair[1])
        close(pair[1])
        guard let pid = spawned else { throw KeychainStatus.io }
        var byte: UInt8 = 0
        var fd: Int32 = -1
        _ = retryingOnInterrupt { kcfs_recv_with_fd(pair[0], &byte, 1, 0, &fd) }
        let status = wait(pid)
        guard fd >= 0 else { throw KeychainStatus.io }
        guard status == 0 else {
            close(fd)
            throw KeychainStatus.io
        }
        return fd
    }

    /// Unmounts `point` in this namespace (`lazy`: also when busy or dead): umount2 as root,
    /// `fusermount3 -u [-z]` otherwise. True when no keychainfs mount is left there.
    @discardableResult
    public static func unmount(_ point: String, lazy: Bool) -> Bool {
        if geteuid() == 0 {
            if umount2(point, lazy ? Int32(MNT_DETACH) : 0) != 0, !lazy { _ = umount2(point, Int32(MNT_DETACH)) }
        } else if let pid = run([fusermount, "-u", "-q"] + (lazy ? ["-z"] : []) + ["--", point], passing: nil) {
            if wait(pid) != 0, !lazy, let again = run([fusermount, "-u", "-q", "-z", "--", point], passing: nil) {
                _ = wait(again)
            }
        }
        return !isMounted(point)
    }

    public static func isMounted(_ point: String) -> Bool { MountTable.isMounted(point) }
    public static func isDead(_ point: String) -> Bool { MountTable.isDead(point) }

    /// Starts `argv` with standard input, output and error and `passing` as descriptor 3
    /// (named by `_FUSE_COMMFD`); nothing else of this process's descriptors or environment.
    static func run(_ argv: [String], passing: Int32?) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var env = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]
        if let passing {
            posix_spawn_file_actions_adddup2(&actions, passing, 3)
            env.append("_FUSE_COMMFD=3")
            kcfs_spawn_actions_closefrom(&actions, 4)
        } else {
            kcfs_spawn_actions_closefrom(&actions, 3)
        }
        var cargs = argv.map { strdup($0) } + [nil]
        var cenv = env.map { strdup($0) } + [nil]
        defer { for p in cargs + cenv { free(p) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, nil, &cargs, &cenv) == 0 else { return nil }
        return pid
    }

    /// The child's exit status (128 + signal when killed).
    static func wait(_ pid: pid_t) -> Int32 {
        ChildProcess.waitForExit(pid).map(ChildProcess.exitCode) ?? 255
    }
}
