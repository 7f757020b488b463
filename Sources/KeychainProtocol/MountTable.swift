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
/// daemon re-establishes them and `status` can name the ones left dead; and one that a `stop`
/// took down, which the vault's next daemon mounts again unless `unmount` forgets it first.
public struct MountRecord: Sendable, Equatable {
    public var mountpoint: String
    /// The option list as given (`-o` plus the view's options).
    public var options: String
    /// Who asked for it.
    public var uid: UInt32
    /// Taken down by a stop (`keychainfs stop`, SIGTERM): not mounted now, mounted again by the
    /// next daemon.
    public var stopped: Bool

    public init(mountpoint: String, options: String, uid: UInt32, stopped: Bool = false) {
        self.mountpoint = mountpoint
        self.options = options
        self.uid = uid
        self.stopped = stopped
    }

    static let stoppedMark = "stopped"

    /// One line each: `UID<TAB>MOUNTPOINT<TAB>OPTIONS`, and `<TAB>stopped` for a mount a stop
    /// took down. Mountpoints and options with a tab or newline are not recorded.
    public static func encode(_ records: [MountRecord]) -> String {
        records.filter { r in !(r.mountpoint + r.options).contains(where: { $0 == "\t" || $0 == "\n" }) }
            .map { "\($0.uid)\t\($0.mountpoint)\t\($0.options)" + ($0.stopped ? "\t" + stoppedMark : "") + "\n" }.joined()
    }

    public static func decode(_ text: String) -> [MountRecord] {
        text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard f.count == 3 || (f.count == 4 && f[3] == stoppedMark), let uid = UInt32(f[0]), f[1].hasPrefix("/") else { return nil }
            return MountRecord(mountpoint: String(f[1]), options: String(f[2]), uid: uid, stopped: f.count == 4)
        }
    }

    /// The records at `path`; none when it is missing or unreadable.
    public static func read(_ path: String) -> [MountRecord] {
        guard let text = try? FileSystem.contents(of: path, limit: 1 << 20) else { return [] }
        return decode(String(decoding: text, as: UTF8.self))
    }

    /// Forgets the record a stop left for `point` (while no daemon runs: `unmount`, or a `mount`
    /// that brings its own options), so the next daemon does not mount it again. The file is
    /// replaced whole, keeping its owner and mode (root may edit the file of a vault's owner,
    /// whose daemon must still read it). - Returns: whether there was such a record.
    /// - Throws: the `Errno` of opening or writing the file.
    @discardableResult
    public static func forgetStopped(_ point: String, in path: String) throws(Errno) -> Bool {
        let records = read(path)
        guard records.contains(where: { $0.mountpoint == point && $0.stopped }) else { return false }
        let kept = Array(encode(records.filter { !($0.mountpoint == point && $0.stopped) }).utf8)
        // Written beside it and renamed over it, with its owner and mode: a crash or a full disk
        // leaves the old file whole, never a truncated one.
        let original = try FileSystem.status(of: path, followingLinks: false)
        let tmp = path + ".\(CurrentProcess.id).tmp"
        let fd = try FileDescriptor.open(tmp, .writeOnly, options: [.create, .exclusiveCreate, .noFollow], permissions: original.permissions)
        do {
            defer { try? fd.close() }
            try fd.setOwner(original.owner, group: original.group)
            try fd.setPermissions(original.permissions)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(kept.count, 1), alignment: 1)
            defer { buffer.deallocate() }
            buffer.copyBytes(from: kept)
            try fd.writeAll(UnsafeRawBufferPointer(rebasing: buffer[0..<kept.count]))
            try fd.sync()
            try FileSystem.rename(tmp, to: path)
        } catch {
            try? FileSystem.remove(tmp)
            throw error
        }
        return true
    }
}
