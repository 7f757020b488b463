import Glibc

/// The system's clocks (clock_gettime(2)) and a pause.
public enum SystemClock {
    /// A reading of a clock: whole seconds and the nanoseconds past them.
    public struct Reading: Sendable, Equatable {
        public var seconds: Int64
        public var nanoseconds: Int64
    }

    /// Wall-clock time since the Unix epoch (`CLOCK_REALTIME`).
    public static func realtime() -> Reading { read(CLOCK_REALTIME) }

    /// Time on a clock that never steps back (`CLOCK_MONOTONIC`): for intervals, not dates.
    public static func monotonic() -> Reading { read(CLOCK_MONOTONIC) }

    private static func read(_ clock: clockid_t) -> Reading {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Reading(seconds: Int64(ts.tv_sec), nanoseconds: Int64(ts.tv_nsec))
    }

    /// Suspends the calling thread for about `microseconds` (usleep(3)); a signal may end it early.
    public static func sleep(microseconds: UInt32) {
        usleep(microseconds)
    }
}
