import KeychainCrypto

/// The binary encoding of an attribute dictionary, shared by the sealed attribute blob and the
/// daemon's socket messages: u16 count, then per entry a u8 name length, the name, a u8 type tag
/// and the value. Layout in docs/vault-format.md.
public enum AttributeCoding {
    // Value type tags; frozen.
    private enum Tag: UInt8 { case string = 1, data = 2, number = 3, bool = 4, date = 5 }

    /// The exact number of bytes `write` produces.
    public static func encodedSize(_ attributes: Attributes) -> Int { size(attributes, name: \.rawValue) }
    public static func encodedSize(_ fields: Fields) -> Int { size(fields, name: { $0 }) }

    public static func write(_ attributes: Attributes, into w: inout ByteWriter) { write(attributes, name: \.rawValue, into: &w) }
    public static func write(_ fields: Fields, into w: inout ByteWriter) { write(fields, name: { $0 }, into: &w) }

    /// - Throws: `KeychainStatus.decode` on truncated or malformed input.
    public static func read(from r: inout ByteReader) throws -> Attributes { try read(from: &r, key: AttributeKey.init(rawValue:)) }
    /// The same encoding read as named fields. - Throws: `KeychainStatus.decode`.
    public static func readFields(from r: inout ByteReader) throws -> Fields { try read(from: &r, key: { $0 }) }

    private static func size<K>(_ entries: [K: AttributeValue], name: (K) -> String) -> Int {
        entries.reduce(2) { total, entry in
            let name = min(name(entry.key).utf8.count, 255)
            let value: Int
            switch entry.value {
            case .string(let s): value = 4 + s.utf8.count
            case .data(let d): value = 4 + d.count
            case .number, .date: value = 8
            case .bool: value = 1
            }
            return total + 1 + name + 1 + value
        }
    }

    /// Entries in the order of their names' bytes (a key sorts as its raw name), so equal
    /// dictionaries give equal bytes.
    private static func write<K: Comparable>(_ entries: [K: AttributeValue], name: (K) -> String, into w: inout ByteWriter) {
        w.u16(UInt16(entries.count))
        for key in entries.keys.sorted() {
            let name = Array(name(key).utf8.prefix(255))
            w.u8(UInt8(name.count))
            w.raw(name)
            switch entries[key]! {
            case .string(let s): w.u8(Tag.string.rawValue); w.lengthPrefixed(Array(s.utf8))
            case .data(let d): w.u8(Tag.data.rawValue); w.lengthPrefixed(d)
            case .number(let n): w.u8(Tag.number.rawValue); w.u64(UInt64(bitPattern: n))
            case .bool(let b): w.u8(Tag.bool.rawValue); w.u8(b ? 1 : 0)
            case .date(let t): w.u8(Tag.date.rawValue); w.u64(t.bitPattern)
            }
        }
    }

    private static func read<K: Hashable>(from r: inout ByteReader, key: (String) -> K) throws -> [K: AttributeValue] {
        do {
            let count = Int(try r.u16())
            // Names and string values are made from the bytes in place (most fit a small string);
            // a count larger than the input can hold is caught by the reads, not allocated.
            var out = [K: AttributeValue](minimumCapacity: min(count, r.remaining / 3))
            for _ in 0..<count {
                let name = key(String(decoding: try r.view(Int(try r.u8())), as: UTF8.self))
                guard let tag = Tag(rawValue: try r.u8()) else { throw KeychainStatus.decode }
                switch tag {
                case .string: out[name] = .string(String(decoding: try r.lengthPrefixedView(), as: UTF8.self))
                case .data: out[name] = .data([UInt8](try r.lengthPrefixedView()))
                case .number: out[name] = .number(Int64(bitPattern: try r.u64()))
                case .bool: out[name] = .bool(try r.u8() != 0)
                case .date: out[name] = .date(Double(bitPattern: try r.u64()))
                }
            }
            return out
        } catch is ByteReader.Truncated {
            throw KeychainStatus.decode
        }
    }
}
