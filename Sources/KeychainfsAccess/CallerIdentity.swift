import KeychainProtocol
import KeychainSystem

/// Who is calling, as the kernel reports it: never what the caller says about itself.
public struct CallerIdentity: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Primary and supplementary groups.
    public var groups: Set<UInt32>
    /// The executable; nil when it cannot be read or could belong to another process.
    public var executable: String?

    /// Completes the pid, uid and gid of a FUSE request with the process's groups and executable
    /// from /proc. The requester is blocked in its system call while the request is served, so
    /// its pid cannot be reused meanwhile. Socket callers are pinned at connect instead
    /// (KeychainDaemon's `PinnedIdentity`), since a socket outlives the process that opened it.
    public static func of(pid: Int32, uid: UInt32, gid: UInt32) -> CallerIdentity {
        CallerIdentity(pid: pid, uid: uid, gid: gid, groups: supplementaryGroups(pid: pid).union([gid]),
                       executable: executablePath(pid: pid))
    }

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: Set<UInt32>, executable: String?) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.executable = executable
    }

    static func supplementaryGroups(pid: Int32) -> Set<UInt32> {
        // Byte-level scan for the "Groups:" line: String splitting of the whole file is slow.
        guard let bytes = readSmallBytes("/proc/\(pid)/status") else { return [] }
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


    public static func executablePath(pid: Int32) -> String? {
        guard let target = try? FileSystem.destination(ofLink: "/proc/\(pid)/exe"), !target.isEmpty else { return nil }
        return target
    }
}

public func readSmallFile(_ path: String) -> String? {
    readSmallBytes(path).map { String(decoding: $0, as: UTF8.self) }
}

/// The bytes of a small file (a /proc entry, a state file); nil when it cannot be opened.
public func readSmallBytes(_ path: String) -> [UInt8]? {
    guard let fd = try? FileDescriptor.open(path, .readOnly) else { return nil }
    defer { try? fd.close() }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while true {
        // A read that fails ends the bytes as the end of the file does.
        let n = buf.withUnsafeMutableBytes { (try? fd.read(into: $0)) ?? 0 }
        if n == 0 { break }
        out += buf[0..<n]
    }
    return out
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        String(self.drop(while: { set.contains($0) }).reversed().drop(while: { set.contains($0) }).reversed())
    }
}
