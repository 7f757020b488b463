/// Dates as people and scripts read them: `2026-11-29T17:00:00Z` (ISO 8601, UTC, whole
/// seconds), what the CLI prints and the mount's date xattrs hold.
public enum ISOTime {
    /// The UTC date and time of `unix` seconds since 1970-01-01.
    public static func string(unix: Int64) -> String {
        let days = unix >= 0 ? unix / 86400 : (unix - 86399) / 86400
        let secs = unix - days * 86400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(m))-\(two(d))T\(two(secs / 3600)):\(two(secs % 3600 / 60)):\(two(secs % 60))Z"
    }

    /// The same for Apple absolute time (`cdat`, `mdat`); nil for a value no date can have
    /// (a hostile vault must not trap the conversion).
    public static func string(absolute: Double) -> String? {
        guard absolute.isFinite, abs(absolute) < 1e15 else { return nil }
        return string(unix: Int64(AbsoluteTime.unix(absolute).rounded(.down)))
    }
}
