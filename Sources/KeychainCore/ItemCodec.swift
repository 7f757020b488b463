import KeychainCrypto

/// Encodes and encrypts an item's parts. Each part is sealed under the item's own key with
/// associated data naming the vault, the item, its class, its protection class and the part,
/// so a blob moved to another item, row, class or part fails to open.
enum ItemCodec {
    enum Part: UInt8 { case itemKey = 1, attributes = 2, secret = 3 }

    static func associatedData(vaultID: [UInt8], uuid: [UInt8], itemClass: ItemClass,
                               protection: ProtectionClass, part: Part) -> [UInt8] {
        // One allocation: every open of a file builds this.
        var w = ByteWriter(capacity: associatedDataLabel.count + vaultID.count + uuid.count + 3)
        w.raw(associatedDataLabel)
        w.raw(vaultID)
        w.raw(uuid)
        w.u8(itemClass.code)
        w.u8(protection.code)
        w.u8(part.rawValue)
        return w.bytes
    }

    static let associatedDataLabel = Array("keychainfs item v1".utf8)

    /// Serialises attributes in key order into guarded memory.
    static func encode(_ attributes: Attributes) throws -> SecureBytes {
        var w = ByteWriter(capacity: AttributeCoding.encodedSize(attributes))
        AttributeCoding.write(attributes, into: &w)
        defer { wipeBytes(&w.bytes) }
        return try SecureBytes(copying: w.bytes)
    }

    /// Parses what `encode` wrote. - Throws: `KeychainStatus.decode` on malformed input.
    static func decode(_ blob: SecureBytes) throws -> Attributes {
        try blob.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            let out = try AttributeCoding.read(from: &r)
            guard r.remaining == 0 else { throw KeychainStatus.decode }
            return out
        }
    }
}

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
        var out: [K: AttributeValue] = [:]
        do {
            let count = Int(try r.u16())
            for _ in 0..<count {
                let name = key(String(decoding: try r.raw(Int(try r.u8())), as: UTF8.self))
                guard let tag = Tag(rawValue: try r.u8()) else { throw KeychainStatus.decode }
                switch tag {
                case .string: out[name] = .string(String(decoding: try r.lengthPrefixed(), as: UTF8.self))
                case .data: out[name] = .data(try r.lengthPrefixed())
                case .number: out[name] = .number(Int64(bitPattern: try r.u64()))
                case .bool: out[name] = .bool(try r.u8() != 0)
                case .date: out[name] = .date(Double(bitPattern: try r.u64()))
                }
            }
        } catch is ByteReader.Truncated {
            throw KeychainStatus.decode
        }
        return out
    }
}

/// Keyed blind index tokens: equal values give equal tokens, and without the index key a token
/// says nothing about its value. Lookups by primary key never decrypt an item.
enum IndexToken {
    /// Canonical bytes of a value for tokens: numbers and booleans as integers, strings and
    /// data by their bytes (so a String and its UTF-8 Data find each other).
    static func canonical(_ value: AttributeValue) -> [UInt8] {
        var w = ByteWriter()
        if let n = value.integerView {
            w.u8(UInt8(ascii: "n")); w.u64(UInt64(bitPattern: n))
        } else if let b = value.byteView {
            w.u8(UInt8(ascii: "b")); w.raw(b)
        } else if case .date(let t) = value {
            w.u8(UInt8(ascii: "t")); w.u64(t.bitPattern)
        }
        return w.bytes
    }

    /// A 16-byte token for one attribute of one class.
    static func attribute(_ name: AttributeKey, _ value: AttributeValue, itemClass: ItemClass, key: SecureBytes) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("attr".utf8))
        w.u8(itemClass.code)
        w.lengthPrefixed(Array(name.rawValue.utf8))
        w.raw(canonical(value))
        defer { wipeBytes(&w.bytes) }
        return KeyedHash.hash(w.bytes, key: key, length: 16)
    }

    /// A 16-byte token for an access group, shared by all classes.
    static func group(_ name: String, key: SecureBytes) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array(AttributeKey.accessGroup.rawValue.utf8))
        w.raw(Array(name.utf8))
        defer { wipeBytes(&w.bytes) }
        return KeyedHash.hash(w.bytes, key: key, length: 16)
    }

    /// The 32-byte primary-key token: class, every primary-key attribute (missing ones as
    /// empty), access group and synchronizable. Unique in the store.
    static func primaryKey(_ attributes: Attributes, itemClass: ItemClass, key: SecureBytes) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("pkey".utf8))
        w.u8(itemClass.code)
        for name in itemClass.primaryKey + [.accessGroup, .synchronizable] {
            let value = attributes[name] ?? AttributeKind.of(name).empty
            w.lengthPrefixed(Array(name.rawValue.utf8))
            w.lengthPrefixed(canonical(value))
        }
        defer { wipeBytes(&w.bytes) }
        return KeyedHash.hash(w.bytes, key: key, length: 32)
    }
}
