/// Numbers and codes given as option values, checked before anything is sent: a value out of
/// range or not a number is a usage error naming the option and what it accepts.
extension Arguments {
    /// The decimal value of `flag` within `range`, or nil when `flag` is absent.
    /// - Parameter unit: what the number counts, for the message ("a number of seconds").
    /// - Throws: `UsageError` when the value is not a decimal number or is outside `range`.
    func number(_ flag: String, in range: ClosedRange<Int64>, unit: String) throws -> Int64? {
        guard let text = value(flag) else { return nil }
        return try Self.number(text, flag: flag, in: range, unit: unit)
    }

    /// `text` as a decimal number within `range`; `flag` and `unit` name it in the message.
    package static func number(_ text: String, flag: String, in range: ClosedRange<Int64>, unit: String) throws -> Int64 {
        let accepted = "\(flag) takes \(unit) from \(range.lowerBound) to \(range.upperBound)"
        let digits = text.hasPrefix("-") ? text.utf8.dropFirst() : text.utf8[...]
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw UsageError("\(accepted); \(Output.jsonString(text)) is not a number")
        }
        guard let n = Int64(text), range.contains(n) else {
            throw UsageError("\(accepted); \(text) is out of range")
        }
        return n
    }

    /// The octal value of `flag` (digits 0-7 only) within `range`, or nil when absent.
    func octal(_ flag: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = value(flag) else { return nil }
        func octal(_ n: Int64) -> String { n == 0 ? "0" : "0" + String(n, radix: 8) }
        let accepted = "\(flag) takes an octal mode from \(octal(range.lowerBound)) to \(octal(range.upperBound)), such as 0440"
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) else {
            throw UsageError("\(accepted); \(Output.jsonString(text)) is not an octal number")
        }
        guard let n = Int64(text, radix: 8), range.contains(n) else {
            throw UsageError("\(accepted); \(text) is out of range")
        }
        return n
    }

    /// A four-character code (`-r htps`, `-t dflt`, `-c`, `-C`), as `security` takes them:
    /// exactly four printable ASCII characters (trailing spaces count: `"ftp "`).
    func fourCharCode(_ flag: String, what: String) throws -> String? {
        guard let text = value(flag) else { return nil }
        guard text.utf8.count == 4, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
            throw UsageError("\(flag) takes \(what) of exactly four characters (such as \(Self.codeExample[flag] ?? "abcd")); \(Output.jsonString(text)) is not one")
        }
        return text
    }

    private static let codeExample = ["-r": "htps or \"ftp \"", "-t": "dflt", "-c": "aapl", "-C": "note"]
}
