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

    /// Only the attributes `selection` names; every entry is still checked as `read` checks it,
    /// so a blob either reader refuses the other refuses too. - Throws: `KeychainStatus.decode`.
    public static func read(from r: inout ByteReader, keeping selection: AttributeSelection) throws -> Attributes {
        try read(from: &r, capacity: selection.count) { selection.key(named: $0) }
    }

    /// The values of the attributes `selection` names, by their position in it (nil where the
    /// blob has none): no dictionary is made and no name hashed. Every entry is still checked as
    /// `read` checks it. - Throws: `KeychainStatus.decode`.
    public static func read(from r: inout ByteReader, selecting selection: AttributeSelection) throws -> [AttributeValue?] {
        try read(from: &r, positions: selection)
    }

    /// The bytes one value takes as a record's entry writes it: its tag and its bytes.
    public static func encodedSize(_ value: AttributeValue) -> Int {
        switch value {
        case .string(let s): return 1 + 4 + s.utf8.count
        case .data(let d): return 1 + 4 + d.count
        case .number, .date: return 1 + 8
        case .bool: return 1 + 1
        }
    }

    /// One value as a record's entry writes it (its tag, then its bytes), for messages that
    /// carry values by position rather than by name, written at `offset` in `out`; the offset
    /// after them, or nil when they do not fit (nothing is then written past `out`'s end).
    public static func write(_ value: AttributeValue, into out: UnsafeMutableRawBufferPointer, at offset: Int) -> Int? {
        let size = encodedSize(value)
        guard offset >= 0, size <= out.count - offset else { return nil }
        func put<T: FixedWidthInteger>(_ v: T, _ at: Int) { out.storeBytes(of: v.bigEndian, toByteOffset: at, as: T.self) }
        func bytes(_ b: UnsafeRawBufferPointer) {
            put(UInt32(b.count), offset + 1)
            if b.count > 0 { (out.baseAddress! + offset + 5).copyMemory(from: b.baseAddress!, byteCount: b.count) }
        }
        switch value {
        case .string(var s): put(Tag.string.rawValue, offset); s.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
        case .data(let d): put(Tag.data.rawValue, offset); d.withUnsafeBytes { bytes($0) }
        case .number(let n): put(Tag.number.rawValue, offset); put(UInt64(bitPattern: n), offset + 1)
        case .bool(let b): put(Tag.bool.rawValue, offset); put(UInt8(b ? 1 : 0), offset + 1)
        case .date(let t): put(Tag.date.rawValue, offset); put(t.bitPattern, offset + 1)
        }
        return offset + size
    }

    /// One value `write(_:into:)` wrote. - Throws: `KeychainStatus.decode` on truncated or malformed input.
    public static func readValue(from r: inout ByteReader) throws -> AttributeValue {
        do {
            return try readValue(from: &r, keep: true)!
        } catch is ByteReader.Truncated {
            throw KeychainStatus.decode
        }
    }

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

    /// Entries in the order of their names' bytes, so equal dictionaries give equal bytes. What
    /// is sorted is each entry's position with its name's first eight bytes as an integer, so
    /// nothing reference-counted moves and most comparisons are one integer's; names and strings
    /// are copied as UTF-8 in place.
    private static func write<K>(_ entries: [K: AttributeValue], name: (K) -> String, into w: inout ByteWriter) {
        w.u16(UInt16(entries.count))
        guard !entries.isEmpty else { return }
        typealias Slot = (head: UInt64, index: Dictionary<K, AttributeValue>.Index)
        var order: [Slot] = []
        order.reserveCapacity(entries.count)
        for i in entries.indices { order.append((head(of: name(entries[i].key)), i)) }
        func before(_ a: Slot, _ b: Slot) -> Bool {
            a.head != b.head ? a.head < b.head : Self.precedes(name(entries[a.index].key), name(entries[b.index].key))
        }
        if order.count > 16 {
            order.sort(by: before)
        } else {
            // Insertion sort: a request's record holds a handful of entries, for which the
            // library's sort costs more in setting up than in comparing.
            for i in 1..<order.count {
                var j = i
                while j > 0, before(order[j], order[j - 1]) {
                    order.swapAt(j, j - 1)
                    j -= 1
                }
            }
        }
        for slot in order {
            let (key, value) = entries[slot.index]
            var text = name(key)
            text.withUTF8 { b in
                let n = min(b.count, 255)
                w.u8(UInt8(n))
                w.raw(UnsafeBufferPointer(rebasing: b[0..<n]))
            }
            switch value {
            case .string(var s): w.u8(Tag.string.rawValue); s.withUTF8 { w.lengthPrefixed($0) }
            case .data(let d): w.u8(Tag.data.rawValue); w.lengthPrefixed(d)
            case .number(let n): w.u8(Tag.number.rawValue); w.u64(UInt64(bitPattern: n))
            case .bool(let b): w.u8(Tag.bool.rawValue); w.u8(b ? 1 : 0)
            case .date(let t): w.u8(Tag.date.rawValue); w.u64(t.bitPattern)
            }
        }
    }

    /// A name's first eight bytes, the first in the highest byte (zeros past its end): integer
    /// order is byte order wherever two names differ in those bytes.
    private static func head(of name: String) -> UInt64 {
        var name = name
        return name.withUTF8 { b in
            var v: UInt64 = 0
            for i in 0..<min(b.count, 8) { v |= UInt64(b[i]) << (56 - 8 * UInt64(i)) }
            return v
        }
    }

    /// Byte order of two names' UTF-8 (docs/vault-format.md): the same as `String`'s for ASCII.
    static func precedes(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { x in b.withUTF8 { y in x.lexicographicallyPrecedes(y) } }
    }

    private static func read<K: Hashable>(from r: inout ByteReader, key: (String) -> K) throws -> [K: AttributeValue] {
        try read(from: &r, capacity: nil) { key(String(decoding: $0, as: UTF8.self)) }
    }

    /// The entries whose name `key` maps to a key (nil skips the entry after checking it).
    private static func read<K: Hashable>(from r: inout ByteReader, capacity: Int?,
                                          key: (UnsafeRawBufferPointer) -> K?) throws -> [K: AttributeValue] {
        do {
            let count = Int(try r.u16())
            // Names and string values are made from the bytes in place (most fit a small string);
            // a count larger than the input can hold is caught by the reads, not allocated.
            var out = [K: AttributeValue](minimumCapacity: min(capacity ?? count, count, r.remaining / 3))
            for _ in 0..<count {
                let name = key(try r.view(Int(try r.u8())))
                if let value = try readValue(from: &r, keep: name != nil), let name { out[name] = value }
            }
            return out
        } catch is ByteReader.Truncated {
            throw KeychainStatus.decode
        }
    }

    /// The values of the entries `selection` names, by position; the rest checked and skipped.
    private static func read(from r: inout ByteReader, positions selection: AttributeSelection) throws -> [AttributeValue?] {
        do {
            let count = Int(try r.u16())
            var out = [AttributeValue?](repeating: nil, count: selection.count)
            for _ in 0..<count {
                let position = selection.position(named: try r.view(Int(try r.u8())))
                if let value = try readValue(from: &r, keep: position != nil), let position { out[position] = value }
            }
            return out
        } catch is ByteReader.Truncated {
            throw KeychainStatus.decode
        }
    }

    /// One entry's tag and value, checked; the value made only when `keep`.
    @inline(__always)
    private static func readValue(from r: inout ByteReader, keep: Bool) throws -> AttributeValue? {
        guard let tag = Tag(rawValue: try r.u8()) else { throw KeychainStatus.decode }
        switch tag {
        case .string:
            let bytes = try r.lengthPrefixedView()
            return keep ? .string(String(decoding: bytes, as: UTF8.self)) : nil
        case .data:
            let bytes = try r.lengthPrefixedView()
            return keep ? .data([UInt8](bytes)) : nil
        case .number:
            let n = try r.u64()
            return keep ? .number(Int64(bitPattern: n)) : nil
        case .bool:
            let b = try r.u8()
            return keep ? .bool(b != 0) : nil
        case .date:
            let t = try r.u64()
            return keep ? .date(Double(bitPattern: t)) : nil
        }
    }
}

/// The attribute names a reader keeps (`AttributeCoding.read(from:keeping:)`), matched against
/// each entry's name by its length and its first eight bytes packed in an integer, then by the
/// rest: no `String` is made for a name that is skipped.
public struct AttributeSelection: Sendable {
    private struct Name: Sendable {
        let key: AttributeKey
        let bytes: [UInt8]
        let packed: UInt64
    }
    private let names: [Name]

    public init(_ keys: [AttributeKey]) {
        var seen = Set<AttributeKey>()
        names = keys.filter { seen.insert($0).inserted }.map { key in
            let bytes = Array(key.rawValue.utf8)
            return bytes.withUnsafeBytes { Name(key: key, bytes: bytes, packed: Self.pack($0)) }
        }
    }

    public var count: Int { names.count }

    fileprivate func key(named name: UnsafeRawBufferPointer) -> AttributeKey? {
        position(named: name).map { names[$0].key }
    }

    /// Where the name with these UTF-8 bytes is in the selection, or nil.
    fileprivate func position(named name: UnsafeRawBufferPointer) -> Int? {
        let packed = Self.pack(name)
        for i in names.indices where names[i].packed == packed && names[i].bytes.count == name.count {
            if name.count <= 8 || names[i].bytes.elementsEqual(name) { return i }
        }
        return nil
    }

    /// Where `key` is in the selection (the order it was made in, repeats left out), or nil.
    /// Compared as keys are (a selection holds a handful): equal names are one word's compare.
    public func position(of key: AttributeKey) -> Int? {
        names.firstIndex { $0.key == key }
    }

    /// The first eight bytes, the first in the lowest byte, copied as one block.
    private static func pack(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var v: UInt64 = 0
        withUnsafeMutableBytes(of: &v) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(8))) }
        return UInt64(littleEndian: v)
    }
}
