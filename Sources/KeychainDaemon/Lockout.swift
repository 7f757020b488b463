import Glibc
import KeychainSystem
import KeychainfsAccess
import KeychainCore

/// Failed-unlock back-off per caller uid, recorded in a file so that restarting the daemon does
/// not reset it. After n consecutive failures by one uid, that uid's next attempt waits
/// 2^(n-1) seconds (at most 60) from its last failure; other users are not delayed by it.
/// The file holds one line per uid: `UID FAILURES LAST-FAILURE-UNIX-MILLIS`. A line of two
/// numbers (the format before counts were per uid) applies to every uid.
///
/// It fails closed: an attempt is recorded as a failure before its passphrase is checked
/// (`recordAttempt`), and every call throws `KeychainStatus.diskFull` (ENOSPC, EDQUOT) or `.io`
/// when the file cannot be read or replaced, so an attempt that could not be recorded is never
/// checked. The file is replaced whole (written, fsynced, renamed) or not at all.
struct Lockout {
    let path: String

    struct State { var failures: Int; var lastFailureMillis: Int }

    static func nowMillis() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
    }

    /// Every uid's state; `nil` keys the line that applies to everyone. A missing file is no
    /// failures; an unreadable one throws.
    private func readAll() throws -> [UInt32?: State] {
        let now = Lockout.nowMillis()
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 && errno == ENOENT { return [:] }
        guard fd >= 0 else { throw KeychainStatus.writeFailure(errno) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw KeychainStatus.writeFailure(errno) }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n: Int
            do { n = try buf.withUnsafeMutableBytes { try Descriptor.readSome(into: $0, from: fd) } } catch {
                throw KeychainStatus.writeFailure(Errno(error).rawValue)
            }
            if n == 0 { break }
            bytes += buf[0..<n]
        }
        // This file is never written empty or cut, so damage (an empty file, a line that does
        // not parse, a missing last newline) is one failure for everyone, dated when the file
        // was last written: a delay that passes, never "no failures".
        let written = min(max(st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1_000_000, 0), now)
        let damaged = State(failures: 1, lastFailureMillis: written)
        guard !bytes.isEmpty, bytes.last == UInt8(ascii: "\n") else { return [nil: damaged] }
        var out: [UInt32?: State] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            let parts = fields.compactMap { Int($0) }
            // Clamp what the file says, so no value in it can overflow the arithmetic below.
            func state(_ f: Int, _ t: Int) -> State { State(failures: min(max(f, 0), 1000), lastFailureMillis: min(max(t, 0), now)) }
            switch parts.count {
            case 3 where fields.count == 3 && parts[0] >= 0 && parts[0] <= Int(UInt32.max): out[UInt32(parts[0])] = state(parts[1], parts[2])
            case 2 where fields.count == 2: out[nil] = state(parts[0], parts[1])
            default: out[nil] = damaged
            }
        }
        return out
    }

    /// The caller's own count, raised to the shared line's where that is higher or newer.
    private static func state(of uid: UInt32, in all: [UInt32?: State]) -> State {
        let own = all[uid] ?? State(failures: 0, lastFailureMillis: 0)
        guard let shared = all[nil], shared.lastFailureMillis > own.lastFailureMillis || shared.failures > own.failures else { return own }
        return State(failures: max(own.failures, shared.failures), lastFailureMillis: max(own.lastFailureMillis, shared.lastFailureMillis))
    }

    func read(uid: UInt32) throws -> State { Self.state(of: uid, in: try readAll()) }

    /// Microseconds `uid` must wait before its next attempt may be checked.
    func remainingDelayMicros(uid: UInt32) throws -> Int {
        let s = try read(uid: uid)
        guard s.failures > 0 else { return 0 }
        let delayMillis = min(1 << min(s.failures - 1, 6), 60) * 1000
        return max(0, s.lastFailureMillis + delayMillis - Lockout.nowMillis()) * 1000
    }

    /// Counts an attempt as a failure, durably, before its passphrase is checked; a success
    /// then `reset`s it. Throws (and leaves the file as it was) when it cannot be written: the
    /// attempt must then be refused unchecked.
    func recordAttempt(uid: UInt32) throws {
        var all = try readAll()
        let s = Self.state(of: uid, in: all)
        all[uid] = State(failures: s.failures + 1, lastFailureMillis: Lockout.nowMillis())
        try write(all)
    }

    /// Dates the failure recorded by `recordAttempt` at its end, so the back-off runs from the
    /// failure as it did when failures were recorded after the check. If this write fails the
    /// earlier date stands: the failure is counted either way.
    func markFailed(uid: UInt32) throws {
        var all = try readAll()
        guard var s = all[uid] else { return }
        s.lastFailureMillis = Lockout.nowMillis()
        all[uid] = s
        try write(all)
    }

    /// A success clears the caller's count (and a count from the older, shared format).
    func reset(uid: UInt32) throws {
        var all = try readAll()
        all[uid] = nil
        all[nil] = nil
        if all.isEmpty {
            guard unlink(path) == 0 || errno == ENOENT else { throw KeychainStatus.writeFailure(errno) }
        } else {
            try write(all)
        }
    }

    /// Replaces the file by a temporary one written whole and fsynced; on any failure the
    /// temporary file goes and the old file stays.
    private func write(_ all: [UInt32?: State]) throws {
        var text = ""
        for (uid, s) in all.sorted(by: { ($0.key ?? 0) < ($1.key ?? 0) }) {
            if let uid { text += "\(uid) \(s.failures) \(s.lastFailureMillis)\n" } else { text += "\(s.failures) \(s.lastFailureMillis)\n" }
        }
        let bytes = Array(text.utf8)
        let tmp = path + ".tmp"
        unlink(tmp)
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw KeychainStatus.writeFailure(errno) }
        func fail(_ e: Int32) -> KeychainStatus {
            close(fd)
            unlink(tmp)
            return KeychainStatus.writeFailure(e)
        }
        do { try bytes.withUnsafeBytes { try Descriptor.writeAll($0, to: fd) } } catch { throw fail(Errno(error).rawValue) }
        guard fsync(fd) == 0 else { throw fail(errno) }
        guard close(fd) == 0 else {
            let e = errno
            unlink(tmp)
            throw KeychainStatus.writeFailure(e)
        }
        guard rename(tmp, path) == 0 else {
            let e = errno
            unlink(tmp)
            throw KeychainStatus.writeFailure(e)
        }
        // The rename itself is durable once the directory is.
        let dir = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let dfd = open(dir.isEmpty ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw KeychainStatus.writeFailure(errno) }
        defer { close(dfd) }
        guard fsync(dfd) == 0 else { throw KeychainStatus.writeFailure(errno) }
    }

}
