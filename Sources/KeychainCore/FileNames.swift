import KeychainCrypto

/// Reversible file names for attribute values (docs/filesystem.md).
///
/// A value becomes its bytes with `%`, `/` and NUL written as `%XX` (upper-case hex). A name
/// that would be `.` or `..` has its first `.` written as `%2E`; so does every service name that
/// starts with `.`, because dot-names at the top are reserved for the other classes'
/// directories. The empty value is `%`. A name longer than 255 bytes becomes `%H` and 32 hex
/// digits of a BLAKE2b hash of the value, resolved by lookup.
public enum FileNames {
    public static let maximumLength = 255

    /// - Parameter topLevel: true for service names, whose leading `.` is always escaped.
    public static func escape(_ value: [UInt8], topLevel: Bool = false) -> [UInt8] {
        if value.isEmpty { return [UInt8(ascii: "%")] }
        let dot = UInt8(ascii: ".")
        let escapeFirstDot = topLevel || value == [dot] || value == [dot, dot]
        var out: [UInt8] = []
        out.reserveCapacity(value.count)
        for (i, b) in value.enumerated() {
            if b == UInt8(ascii: "%") || b == UInt8(ascii: "/") || b == 0 || (i == 0 && b == dot && escapeFirstDot) {
                out += [UInt8(ascii: "%")] + hexByte(b)
            } else {
                out.append(b)
            }
        }
        if out.count > maximumLength {
            return Array("%H".utf8) + hexByte(KeyedHash.hash(value, key: nil, length: 16))
        }
        return out
    }

    /// The value a name stands for; nil for a hashed long name (resolve it by comparing
    /// `escape` of candidates) or a malformed escape.
    public static func unescape(_ name: [UInt8], topLevel: Bool = false) -> [UInt8]? {
        if name == [UInt8(ascii: "%")] { return [] }
        if name.starts(with: Array("%H".utf8)) { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < name.count {
            if name[i] == UInt8(ascii: "%") {
                guard i + 2 < name.count, let hi = hexValue(name[i + 1]), let lo = hexValue(name[i + 2]) else { return nil }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(name[i])
                i += 1
            }
        }
        return escape(out, topLevel: topLevel) == name ? out : nil  // only canonical spellings are accepted
    }

    static func hexByte(_ b: UInt8) -> [UInt8] { hexByte([b]) }

    static func hexByte(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789ABCDEF".utf8)
        return bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
