import CProcess
import Glibc

/// Spawned children: how they start and how their end is collected.
public enum ChildProcess {
    /// `POSIX_SPAWN_SETSID`: the child leads a new session. glibc declares it only with
    /// `_GNU_SOURCE`, which Swift's Glibc module does not define, so CProcess reads it in C.
    public static var newSessionFlag: Int16 { Int16(kcfs_spawn_setsid_flag()) }

    /// What the child's descriptors and directory are made of before it runs, in order.
    public enum Setup: Sendable {
        /// Opens `path` as descriptor `target` (not close-on-exec: it is meant to stay open).
        case open(Int32, path: String, FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions = [],
                  permissions: FilePermissions = [])
        /// Duplicates `source` onto `target` (dup2).
        case duplicate(FileDescriptor, as: Int32)
        /// Closes every descriptor from `lowest` up (glibc 2.34+), so the child holds none of
        /// the starter's pipes.
        case closeFrom(Int32)
        /// Starts the child in `path`.
        case changeDirectory(String)
    }

    /// Starts the program at `argv[0]` (posix_spawn(3)) with exactly `environment`
    /// (`NAME=value` strings). - Parameter newSession: the child leads a new session.
    /// - Returns: the child's pid. - Throws: the `Errno` posix_spawn returned.
    public static func spawn(_ argv: [String], environment: [String], setup: [Setup] = [],
                             newSession: Bool = false) throws(Errno) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for step in setup {
            switch step {
            case let .open(target, path, mode, options, permissions):
                posix_spawn_file_actions_addopen(&actions, target, path, mode.rawValue | options.rawValue, permissions.rawValue)
            case let .duplicate(source, target):
                posix_spawn_file_actions_adddup2(&actions, source.rawValue, target)
            case let .closeFrom(lowest):
                kcfs_spawn_actions_closefrom(&actions, lowest)
            case let .changeDirectory(path):
                kcfs_spawn_actions_chdir(&actions, path)
            }
        }
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        if newSession { posix_spawnattr_setflags(&attr, newSessionFlag) }
        var cargs = argv.map { strdup($0) } + [nil]
        var cenv = environment.map { strdup($0) } + [nil]
        defer { for p in cargs + cenv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, &attr, &cargs, &cenv)
        guard rc == 0 else { throw Errno(rawValue: rc) }
        return pid
    }

    /// Waits for `pid` to end. Returns its wait status, or nil when it cannot be waited for
    /// (not our child, or already collected).
    public static func waitForExit(_ pid: Int32) -> Int32? {
        var status: Int32 = 0
        return retryingOnInterrupt { waitpid(pid, &status, 0) } == pid ? status : nil
    }

    /// The wait status of `pid` when it has ended, collecting it; nil while it runs or when it
    /// cannot be waited for (waitpid(2) `WNOHANG`).
    public static func statusIfEnded(_ pid: Int32) -> Int32? {
        var status: Int32 = 0
        return retryingOnInterrupt { waitpid(pid, &status, WNOHANG) } == pid ? status : nil
    }

    /// A wait status as a shell reports it: the exit code, or 128 + the signal that killed it.
    public static func exitCode(_ status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
