/// What /proc says of a process by its number (proc(5)). A number can be reused once its
/// process is gone, so these fit a process that cannot end meanwhile: a FUSE requester blocked
/// in its system call while its request is served, or this process.
public enum ProcessFiles {
    /// The supplementary groups of the `Groups:` line of `/proc/PID/status`; empty when the
    /// process is gone or the file cannot be read.
    public static func supplementaryGroups(of pid: Int32) -> Set<UInt32> {
        // Up to 65,536 groups of ten digits: well below the limit.
        guard let bytes = try? FileSystem.contents(of: "/proc/\(pid)/status", limit: 1 << 20) else { return [] }
        // Byte-level scan for the "Groups:" line: String splitting of the whole file is slow.
        let key = Array("\nGroups:".utf8)
        guard let start = bytes.firstRange(of: key)?.upperBound else { return [] }
        var groups = Set<UInt32>()
        var value: UInt32 = 0
        var inNumber = false
        for b in bytes[start...] {
            if b >= 48 && b <= 57 {
                value = value &* 10 &+ UInt32(b - 48)
                inNumber = true
            } else {
                if inNumber { groups.insert(value) }
                value = 0
                inNumber = false
                if b == 10 { break }
            }
        }
        return groups
    }

    /// Where `/proc/PID/exe` points (readlink(2)); nil when it cannot be read (a process that
    /// is gone, another user's without the right, a kernel thread).
    public static func executable(of pid: Int32) -> String? {
        guard let target = try? FileSystem.destination(ofLink: "/proc/\(pid)/exe"), !target.isEmpty else { return nil }
        return target
    }
}
