import Glibc
import KeychainAccess

/// Failed-unlock back-off per caller uid, recorded in a file so that restarting the daemon does
/// not reset it. After n consecutive failures by one uid, that uid's next attempt waits
/// 2^(n-1) seconds (at most 60) from its last failure; other users are not delayed by it.
/// The file holds one line per uid: `UID FAILURES LAST-FAILURE-UNIX-MILLIS`. A line of two
/// numbers (the format before counts were per uid) applies to every uid.
struct Lockout {
    let path: String

    struct State { var failures: Int; var lastFailureMillis: Int }

    static func nowMillis() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
    }

    /// Every uid's state; `nil` keys the line that applies to everyone.
    private func readAll() -> [UInt32?: State] {
        let now = Lockout.nowMillis()
        guard let text = readSmallFile(path) else { return [:] }
        var out: [UInt32?: State] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ").compactMap { Int($0) }
            // Clamp what the file says, so no value in it can overflow the arithmetic below; a
            // damaged line counts as one fresh failure for everyone rather than none.
            func state(_ f: Int, _ t: Int) -> State { State(failures: min(max(f, 0), 1000), lastFailureMillis: min(max(t, 0), now)) }
            switch parts.count {
            case 3 where parts[0] >= 0 && parts[0] <= Int(UInt32.max): out[UInt32(parts[0])] = state(parts[1], parts[2])
            case 2: out[nil] = state(parts[0], parts[1])
            default: out[nil] = State(failures: 1, lastFailureMillis: now)
            }
        }
        return out
    }

    func read(uid: UInt32) -> State {
        let all = readAll()
        let own = all[uid] ?? State(failures: 0, lastFailureMillis: 0)
        guard let shared = all[nil], shared.lastFailureMillis > own.lastFailureMillis else { return own }
        return shared
    }

    /// Microseconds `uid` must wait before its next attempt may be checked.
    func remainingDelayMicros(uid: UInt32) -> Int {
        let s = read(uid: uid)
        guard s.failures > 0 else { return 0 }
        let delayMillis = min(1 << min(s.failures - 1, 6), 60) * 1000
        return max(0, s.lastFailureMillis + delayMillis - Lockout.nowMillis()) * 1000
    }

    func recordFailure(uid: UInt32) {
        var all = readAll()
        let s = read(uid: uid)
        all[uid] = State(failures: s.failures + 1, lastFailureMillis: Lockout.nowMillis())
        write(all)
    }

    /// A success clears the caller's count (and a count from the older, shared format).
    func reset(uid: UInt32) {
        var all = readAll()
        all[uid] = nil
        all[nil] = nil
        if all.isEmpty { unlink(path) } else { write(all) }
    }

    private func write(_ all: [UInt32?: State]) {
        var text = ""
        for (uid, s) in all.sorted(by: { ($0.key ?? 0) < ($1.key ?? 0) }) {
            if let uid { text += "\(uid) \(s.failures) \(s.lastFailureMillis)\n" } else { text += "\(s.failures) \(s.lastFailureMillis)\n" }
        }
        let tmp = path + ".tmp"
        unlink(tmp)
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        rename(tmp, path)
    }
}
