/// Lower-case hexadecimal, as the audit log, persistent references and fingerprints print bytes.
public enum Hex {
    /// Two digits per byte, built in place: the audit log calls this for every file open.
    /// Inlinable, as `append` is, so callers get it specialized for their collection.
    @inlinable
    public static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var i = 0
            for b in bytes {
                out[i] = digit(b >> 4)
                out[i + 1] = digit(b & 0x0f)
                i += 2
            }
            return i
        }
    }

    /// Appends the digits of `bytes` to `out`, for text built as bytes (no String in between).
    /// Inlinable: unspecialized, each byte went through a protocol witness (the audit line of
    /// every file open has 52 of them).
    @inlinable
    public static func append<Bytes: Collection>(_ bytes: Bytes, to out: inout [UInt8]) where Bytes.Element == UInt8 {
        out.reserveCapacity(out.count + bytes.count * 2)
        for b in bytes {
            out.append(digit(b >> 4))
            out.append(digit(b & 0x0f))
        }
    }

    /// The bytes of an even-length string of hex digits (either case), or nil.
    public static func decode<Text: StringProtocol>(_ text: Text) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let hi = value(chars[i]), let lo = value(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }

    @usableFromInline
    static func digit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x57
        case 0x41...0x46: return c - 0x37
        default: return nil
        }
    }
}
