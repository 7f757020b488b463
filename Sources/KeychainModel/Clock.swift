import KeychainSystem

/// Apple's absolute time: seconds since 2001-01-01 00:00:00 UTC, what `cdat`, `mdat` and the
/// vault's dates hold.
public enum AbsoluteTime {
    /// Seconds from the Unix epoch to Apple's reference date.
    public static let unixOffset: Double = 978_307_200

    public static func now() -> Double {
        let t = SystemClock.realtime()
        return Double(t.seconds) - unixOffset + Double(t.nanoseconds) / 1e9
    }

    public static func unix(_ absolute: Double) -> Double { absolute + unixOffset }
    public static func absolute(unix: Double) -> Double { unix - unixOffset }
}

/// Seconds on the monotonic clock: for intervals and deadlines, never for dates.
public func monotonicSeconds() -> Double {
    let t = SystemClock.monotonic()
    return Double(t.seconds) + Double(t.nanoseconds) / 1e9
}

/// Whole milliseconds on the monotonic clock, for deadlines kept in integer atomics.
public func monotonicMillis() -> Int64 {
    let t = SystemClock.monotonic()
    return t.seconds * 1000 + t.nanoseconds / 1_000_000
}
