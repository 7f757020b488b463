import Glibc
import KeychainAccess

/// Failed-unlock back-off, recorded in a file so that restarting the daemon does not reset it.
/// After n consecutive failures the next attempt waits 2^(n-1) seconds (at most 60) from the
/// last failure. The file holds the count and the last failure in Unix milliseconds.
struct Lockout {
    let path: String

    struct State { var failures: Int; var lastFailureMillis: Int }

    static func nowMillis() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
    }

    func read() -> State {
        let now = Lockout.nowMillis()
        guard let text = readSmallFile(path) else { return State(failures: 0, lastFailureMillis: 0) }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        // Clamp what the file says, so no value in it can overflow the arithmetic below; a
        // damaged file counts as one fresh failure rather than none.
        guard parts.count == 2 else { return State(failures: 1, lastFailureMillis: now) }
        return State(failures: min(max(parts[0], 0), 1000), lastFailureMillis: min(max(parts[1], 0), now))
    }

    /// Microseconds to wait before the next attempt may be checked.
    func remainingDelayMicros() -> Int {
        let s = read()
        guard s.failures > 0 else { return 0 }
        let delayMillis = min(1 << min(s.failures - 1, 6), 60) * 1000
        return max(0, s.lastFailureMillis + delayMillis - Lockout.nowMillis()) * 1000
    }

    func recordFailure() {
        let s = read()
        write("\(s.failures + 1) \(Lockout.nowMillis())\n")
    }

    func reset() { unlink(path) }

    private func write(_ text: String) {
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
