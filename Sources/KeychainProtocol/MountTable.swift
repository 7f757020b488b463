import KeychainSystem

/// What the kernel says about mounts in this process's mount namespace.
public enum MountTable {
    /// True when this namespace has a keychainfs mount at `point` (/proc/self/mountinfo).
    public static func isMounted(_ point: String) -> Bool {
        guard let table = try? FileSystem.contents(of: "/proc/self/mountinfo", limit: Int.max) else { return false }
        for line in String(decoding: table, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            if unescape(fields[4]) == point && fields[dash + 1] == "fuse.keychainfs" { return true }
        }
        return false
    }

    /// True when `point` is a FUSE mount whose server is gone (the kernel answers ENOTCONN,
    /// or ECONNABORTED for the request the server died on).
    /// statfs (statvfs) first: the kernel always asks the server for it, while stat may answer from
    /// attributes it cached before the server died.
    public static func isDead(_ point: String) -> Bool {
        let gone: Set<Errno> = [.notConnected, .connectionAborted]
        do { try FileSystem.checkFileSystem(at: point) } catch { if gone.contains(error) { return true } }
        do { _ = try FileSystem.status(of: point) } catch { return gone.contains(error) }
        return false
    }

    /// mountinfo writes space, tab, newline and backslash as octal escapes.
    static func unescape(_ field: Substring) -> String {
        var out: [UInt8] = []
        var bytes = Array(field.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "\\"), bytes.count >= 3, let v = UInt8(String(decoding: bytes.prefix(3), as: UTF8.self), radix: 8) {
                out.append(v)
                bytes = bytes.dropFirst(3)
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// One mount a daemon serves, as it records them (`Paths.mountRecords`) so that a restarted
/// daemon re-establishes them and `status` can name the ones left dead.
public struct MountRecord: Sendable, Equatable {
    public var mountpoint: String
    /// The option list as given (`-o` plus the view's options).
    public var options: String
    /// Who asked for it.
    public var uid: UInt32

    public init(mountpoint: String, options: String, uid: UInt32) {
        self.mountpoint = mountpoint
        self.options = options
        self.uid = uid
    }

    /// One line each: `UID<TAB>MOUNTPOINT<TAB>OPTIONS`. Mountpoints and options with a tab or
    /// newline are not recorded.
    public static func encode(_ records: [MountRecord]) -> String {
        records.filter { r in !(r.mountpoint + r.options).contains(where: { $0 == "\t" || $0 == "\n" }) }
            .map { "\($0.uid)\t\($0.mountpoint)\t\($0.options)\n" }.joined()
    }

    public static func decode(_ text: String) -> [MountRecord] {
        text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard f.count == 3, let uid = UInt32(f[0]), f[1].hasPrefix("/") else { return nil }
            return MountRecord(mountpoint: String(f[1]), options: String(f[2]), uid: uid)
        }
    }

    /// The records at `path`; none when it is missing or unreadable.
    public static func read(_ path: String) -> [MountRecord] {
        guard let text = try? FileSystem.contents(of: path, limit: 1 << 20) else { return [] }
        return decode(String(decoding: text, as: UTF8.self))
    }
}
