import KeychainModel
import KeychainCrypto

/// The one JSON shape docker's helper protocol sends: an object of string values, read in
/// guarded memory so that the value of `Secret` is decoded straight into a guarded buffer.
/// Keys match without regard to case and unknown keys are skipped, as Go's encoding/json
/// decodes docker's `Credentials` struct.
public struct JSONCredentials {
    /// The string values of the other keys, by lowercased key.
    public var fields: [String: String] = [:]
    public var secret: SecureBytes?

    public struct Malformed: Error { public var message: String }

    /// - Parameter secretKey: the key (lowercase) whose value is a secret.
    /// - Throws: `Malformed` (its message names a position, never a value).
    public init(parsing input: SecureBytes, secretKey: String) throws {
        try input.withUnsafeBytes { b in
            var p = JSONCursor(bytes: b)
            p.skipSpace()
            try p.expect(UInt8(ascii: "{"))
            p.skipSpace()
            if p.peek == UInt8(ascii: "}") { p.index += 1 } else {
                while true {
                    p.skipSpace()
                    let key = String(decoding: try p.string(into: nil), as: UTF8.self).lowercased()
                    p.skipSpace()
                    try p.expect(UInt8(ascii: ":"))
                    p.skipSpace()
                    if p.peek == UInt8(ascii: "\"") {
                        if key == secretKey {
                            secret?.wipe()
                            secret = try p.secretString()
                        } else {
                            fields[key] = String(decoding: try p.string(into: nil), as: UTF8.self)
                        }
                    } else {
                        try p.skipValue()
                    }
                    p.skipSpace()
                    if p.peek == UInt8(ascii: ",") { p.index += 1; continue }
                    try p.expect(UInt8(ascii: "}"))
                    break
                }
            }
            p.skipSpace()
            guard p.index == b.count else { throw Malformed(message: "invalid JSON: data after the object at byte \(p.index)") }
        }
    }
}

/// A position in JSON text.
private struct JSONCursor {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipSpace() {
        while let c = peek, c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d { index += 1 }
    }

    mutating func expect(_ c: UInt8) throws {
        guard peek == c else { throw fail("expected '\(Character(Unicode.Scalar(c)))'") }
        index += 1
    }

    func fail(_ what: String) -> JSONCredentials.Malformed {
        JSONCredentials.Malformed(message: "invalid JSON: \(what) at byte \(index)")
    }

    /// Decodes a string into `out` (bytes), or returns its bytes when `out` is nil.
    mutating func string(into out: UnsafeMutableRawBufferPointer?) throws -> [UInt8] {
        var plain: [UInt8] = []
        var written = 0
        func emit(_ byte: UInt8) {
            if let out { out[written] = byte } else { plain.append(byte) }
            written += 1
        }
        // UTF-8 by hand: no String holds a secret's characters on the way.
        func emit(scalar: UInt32) {
            let s = (0xD800..<0xE000).contains(scalar) || scalar > 0x10FFFF ? 0xFFFD : scalar
            switch s {
            case 0..<0x80: emit(UInt8(s))
            case 0x80..<0x800: emit(UInt8(0xC0 | (s >> 6))); emit(UInt8(0x80 | (s & 0x3F)))
            case 0x800..<0x10000:
                emit(UInt8(0xE0 | (s >> 12))); emit(UInt8(0x80 | ((s >> 6) & 0x3F))); emit(UInt8(0x80 | (s & 0x3F)))
            default:
                emit(UInt8(0xF0 | (s >> 18))); emit(UInt8(0x80 | ((s >> 12) & 0x3F)))
                emit(UInt8(0x80 | ((s >> 6) & 0x3F))); emit(UInt8(0x80 | (s & 0x3F)))
            }
        }
        try expect(UInt8(ascii: "\""))
        while true {
            guard let c = peek else { throw fail("unterminated string") }
            index += 1
            switch c {
            case UInt8(ascii: "\""):
                lastLength = written
                return plain
            case UInt8(ascii: "\\"):
                guard let e = peek else { throw fail("unterminated escape") }
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): emit(e)
                case UInt8(ascii: "b"): emit(8)
                case UInt8(ascii: "f"): emit(12)
                case UInt8(ascii: "n"): emit(10)
                case UInt8(ascii: "r"): emit(13)
                case UInt8(ascii: "t"): emit(9)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar), peek == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") {
                        // A pair makes one scalar; a high half without its low half is U+FFFD and
                        // the escape after it is read on its own, as Go's decoder does.
                        let after = index
                        index += 2
                        let low = try hex4()
                        if (0xDC00..<0xE000).contains(low) {
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            index = after
                        }
                    }
                    emit(scalar: scalar)
                default: throw fail("invalid escape")
                }
            case 0..<0x20: throw fail("control character in string")
            default: emit(c)
            }
        }
    }

    /// The decoded length of the last string read.
    var lastLength = 0

    /// Decodes a string into a guarded buffer (its decoded form is never longer than its text).
    mutating func secretString() throws -> SecureBytes {
        let room = try SecureBytes(count: bytes.count - index)
        defer { room.wipe() }
        _ = try room.withUnsafeMutableBytes { try string(into: $0) }
        return try room.slice(0..<lastLength)
    }

    mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            index += 1
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = v * 16 + UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = v * 16 + UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = v * 16 + UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail("invalid \\u escape")
            }
        }
        return v
    }

    /// Skips any JSON value (the value of a key docker's struct does not have); nesting is bounded.
    mutating func skipValue(depth: Int = 0) throws {
        guard depth < 64 else { throw fail("nesting too deep") }
        skipSpace()
        guard let c = peek else { throw fail("missing value") }
        switch c {
        case UInt8(ascii: "\""): _ = try string(into: nil)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = c == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            index += 1
            skipSpace()
            if peek == close { index += 1; return }
            while true {
                if close == UInt8(ascii: "}") {
                    skipSpace()
                    _ = try string(into: nil)
                    skipSpace()
                    try expect(UInt8(ascii: ":"))
                }
                try skipValue(depth: depth + 1)
                skipSpace()
                if peek == UInt8(ascii: ",") { index += 1; continue }
                try expect(close)
                return
            }
        default:
            // true, false, null or a number; anything else (a bare word) is refused, as Go does.
            for word in ["true", "false", "null"] where bytes[index...].starts(with: word.utf8) {
                index += word.utf8.count
                return
            }
            try skipNumber()
        }
    }

    /// Skips a number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
    mutating func skipNumber() throws {
        func isDigit(_ c: UInt8?) -> Bool { c.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? false }
        func digits() throws {
            guard isDigit(peek) else { throw fail("invalid value") }
            while isDigit(peek) { index += 1 }
        }
        if peek == UInt8(ascii: "-") { index += 1 }
        if peek == UInt8(ascii: "0") { index += 1 } else { try digits() }
        if peek == UInt8(ascii: ".") { index += 1; try digits() }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            try digits()
        }
    }
}

/// JSON string encoding as Go's encoding/json writes it (HTML-safe: `<`, `>`, `&` as \u escapes),
/// into a caller's buffer so that a secret is escaped in guarded memory, with no copy elsewhere.
public enum JSONString {
    /// The bytes `write` produces for `text`, quotes included.
    public static func encodedCount(_ text: UnsafeRawBufferPointer) -> Int {
        text.reduce(2) { $0 + escapedCount($1) }
    }

    /// Writes `text` quoted and escaped at `out` (`encodedCount` bytes); returns the bytes written.
    public static func write(_ text: UnsafeRawBufferPointer, to out: UnsafeMutableRawPointer) -> Int {
        var n = 0
        func put(_ b: UInt8) { out.storeBytes(of: b, toByteOffset: n, as: UInt8.self); n += 1 }
        put(UInt8(ascii: "\""))
        for b in text {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): put(92); put(b)
            case 10: put(92); put(UInt8(ascii: "n"))
            case 13: put(92); put(UInt8(ascii: "r"))
            case 9: put(92); put(UInt8(ascii: "t"))
            case 0..<0x20, UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "&"):
                put(92); put(UInt8(ascii: "u")); put(48); put(48); put(hexDigit(b >> 4)); put(hexDigit(b & 15))
            default: put(b)
            }
        }
        put(UInt8(ascii: "\""))
        return n
    }

    private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 48 + v : 87 + v }

    private static func escapedCount(_ b: UInt8) -> Int {
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), 10, 13, 9: return 2
        case 0..<0x20, UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "&"): return 6
        default: return 1
        }
    }
}
