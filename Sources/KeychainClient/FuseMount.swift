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
        if CurrentProcess.effectiveUserID == 0 { return try mountDirectly(point, allowOther: allowOther, readOnly: readOnly, owner: owner) }
        var options = "default_permissions,fsname=keychainfs,subtype=keychainfs"
        if allowOther { options += ",allow_other" }
        if readOnly { options += ",ro" }
        return try mountThroughFusermount(point, options: options)
    }

    private static func mountDirectly(_ point: String, allowOther: Bool, readOnly: Bool,
                                      owner: (uid: UInt32, gid: UInt32)) throws -> Int32 {
        guard let device = try? FileDescriptor.open("/dev/fuse", .readWrite) else { throw KeychainStatus.io }
        var data = "fd=\(device.rawValue),rootmode=40000,user_id=\(owner.uid),group_id=\(owner.gid),default_permissions"
        if allowOther { data += ",allow_other" }
        var flags: Mount.Flags = [.noSetUserID, .noDevices]
        if readOnly { flags.insert(.readOnly) }
        do { try Mount.mount(source: "keychainfs", at: point, type: "fuse.keychainfs", flags: flags, data: data) } catch {
            try? device.close()
            throw KeychainStatus.io
        }
        return device.rawValue
    }

    private static func mountThroughFusermount(_ point: String, options: String) throws -> Int32 {
        guard let (ours, theirs) = try? FileDescriptor.unixStreamPair() else { throw KeychainStatus.io }
        defer { try? ours.close() }
        let spawned = run([fusermount, "-o", options, "--", point], passing: theirs)
        try? theirs.close()
        guard let pid = spawned else { throw KeychainStatus.io }
        var byte: UInt8 = 0
        let device = try? withUnsafeMutableBytes(of: &byte) { b in Result { () throws(Errno) in try ours.receive(into: b) } }.get().descriptor
        let status = wait(pid)
        guard let device else { throw KeychainStatus.io }
        // fusermount3 passes /dev/fuse; anything else is not used (it is /dev/fuse or nothing).
        guard status == 0, device.isFuseDevice else {
            try? device.close()
            throw KeychainStatus.io
        }
        return device.rawValue
    }

    /// Unmounts `point` in this namespace (`lazy`: also when busy or dead): umount2 as root,
    /// `fusermount3 -u [-z]` otherwise. True when no keychainfs mount is left there.
    @discardableResult
    public static func unmount(_ point: String, lazy: Bool) -> Bool {
        if CurrentProcess.effectiveUserID == 0 {
            do { try Mount.unmount(point, detach: lazy) } catch { if !lazy { try? Mount.unmount(point, detach: true) } }
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
    static func run(_ argv: [String], passing: FileDescriptor?) -> Int32? {
        var env = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]
        var setup: [ChildProcess.Setup] = [.closeFrom(3)]
        if let passing {
            setup = [.duplicate(passing, as: 3), .closeFrom(4)]
            env.append("_FUSE_COMMFD=3")
        }
        return try? ChildProcess.spawn(argv, environment: env, setup: setup)
    }

    /// The child's exit status (128 + signal when killed).
    static func wait(_ pid: Int32) -> Int32 {
        ChildProcess.waitForExit(pid).map(ChildProcess.exitCode) ?? 255
    }
}
