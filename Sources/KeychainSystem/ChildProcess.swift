import CProcess
import Glibc

/// Spawned children: how they start and how their end is collected.
public enum ChildProcess {
    /// `POSIX_SPAWN_SETSID`: the child leads a new session. glibc declares it only with
    /// `_GNU_SOURCE`, which Swift's Glibc module does not define, so CProcess reads it in C.
    public static var newSessionFlag: Int16 { Int16(kcfs_spawn_setsid_flag()) }

    /// Waits for `pid` to end. Returns its wait status, or nil when it cannot be waited for
    /// (not our child, or already collected).
    public static func waitForExit(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        return retryingOnInterrupt { waitpid(pid, &status, 0) } == pid ? status : nil
    }

    /// A wait status as a shell reports it: the exit code, or 128 + the signal that killed it.
    public static func exitCode(_ status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
