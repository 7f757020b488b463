import KeychainModel
import KeychainSystem

/// The times `audit --since` and `--until` take: ISO 8601 in UTC (`2026-12-02T01:30:00Z`, or a
/// day, `2026-12-02`, meaning its midnight), or a span back from now (`90s`, `15m`, `2h`, `7d`).
enum AuditTimes {
    /// `text` as Unix seconds, `now` being the current time.
    /// - Throws: `UsageError` naming `flag` and the accepted forms.
    static func parse(_ text: String, flag: String, now: Int64 = SystemClock.realtime().seconds) throws -> Int64 {
        if let span = relative(text) { return now - span }
        if let t = iso(text) { return t }
        throw UsageError("\(flag) takes an ISO 8601 time in UTC (2026-12-02T01:30:00Z or 2026-12-02) or a span back from now (90s, 15m, 2h, 7d); \(Output.jsonString(text)) is neither")
    }

    /// Seconds of `N` + `s|m|h|d`; at most ten years, so no subtraction overflows.
    static func relative(_ text: String) -> Int64? {
        guard let unit = text.last, let n = Int64(text.dropLast()), n >= 0,
              text.dropLast().allSatisfy(\.isASCII), text.dropLast().allSatisfy(\.isNumber) else { return nil }
        let scale: Int64
        switch unit {
        case "s": scale = 1
        case "m": scale = 60
        case "h": scale = 3600
        case "d": scale = 86400
        default: return nil
        }
        guard n <= 3650 * 86400 / scale else { return nil }
        return n * scale
    }

    /// `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ` as Unix seconds; nil for anything else or an
    /// impossible date (February 30th, hour 24).
    static func iso(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func number(_ r: Range<Int>) -> Int64? {
            guard r.upperBound <= b.count, b[r].allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            return b[r].reduce(0) { $0 * 10 + Int64($1 - 48) }
        }
        guard b.count == 10 || b.count == 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              let y = number(0..<4), let m = number(5..<7), let d = number(8..<10),
              (1...12).contains(m), d >= 1, d <= daysIn(month: m, year: y) else { return nil }
        var seconds: Int64 = 0
        if b.count == 20 {
            guard b[10] == UInt8(ascii: "T"), b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"), b[19] == UInt8(ascii: "Z"),
                  let h = number(11..<13), let mi = number(14..<16), let s = number(17..<19), h < 24, mi < 60, s < 60
            else { return nil }
            seconds = h * 3600 + mi * 60 + s
        }
        return daysFromCivil(y, m, d) * 86400 + seconds
    }

    static func daysIn(month m: Int64, year y: Int64) -> Int64 {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm, as `Output.isoDate`).
    static func daysFromCivil(_ year: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Unix seconds as the ISO 8601 time `audit` prints.
    static func format(_ unix: Int64) -> String { Output.isoDate(AbsoluteTime.absolute(unix: Double(unix))) }
}
