/// Big-endian byte writing and reading for the vault's binary structures.
public struct ByteWriter {
    public var bytes: [UInt8] = []
    public init() {}
    /// Reserves room up front, so a buffer that will hold secrets is never reallocated (a
    /// reallocation would leave an unwiped copy behind).
    public init(capacity: Int) { bytes.reserveCapacity(capacity) }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    // Big-endian integers appended as one block each: one capacity check, not one a byte.
    public mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    public mutating func raw<C: Collection>(_ b: C) where C.Element == UInt8 { bytes.append(contentsOf: b) }
    /// A u32 length followed by the bytes.
    public mutating func lengthPrefixed<C: Collection>(_ b: C) where C.Element == UInt8 { u32(UInt32(b.count)); raw(b) }
}

/// Reads what `ByteWriter` wrote; every read is bounds-checked and throws on short input.
public struct ByteReader {
    public struct Truncated: Error { public init() {} }
    private let bytes: UnsafeRawBufferPointer
    public private(set) var offset = 0

    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    public var remaining: Int { bytes.count - offset }

    public mutating func u8() throws -> UInt8 {
        guard remaining >= 1 else { throw Truncated() }
        defer { offset += 1 }
        return bytes[offset]
    }
    public mutating func u16() throws -> UInt16 { try bigEndian(UInt16.self) }
    public mutating func u32() throws -> UInt32 { try bigEndian(UInt32.self) }
    public mutating func u64() throws -> UInt64 { try bigEndian(UInt64.self) }

    /// A big-endian integer, its length checked once and its bytes loaded as one word.
    private mutating func bigEndian<T: FixedWidthInteger>(_: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw Truncated() }
        defer { offset += size }
        return T(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
    public mutating func raw(_ count: Int) throws -> [UInt8] { [UInt8](try view(count)) }

    /// The next `count` bytes where they are, without a copy: valid as long as the buffer this
    /// reader reads.
    public mutating func view(_ count: Int) throws -> UnsafeRawBufferPointer {
        guard count >= 0, remaining >= count else { throw Truncated() }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    /// A u32 length and that many bytes, in place.
    public mutating func lengthPrefixedView() throws -> UnsafeRawBufferPointer { try view(Int(try u32())) }
    public mutating func lengthPrefixed() throws -> [UInt8] { try raw(Int(try u32())) }
}

extension ByteReader {
    /// Moves past `count` bytes without copying them (for secrets read in place).
    public mutating func skip(_ count: Int) throws {
        guard count >= 0, remaining >= count else { throw Truncated() }
        offset += count
    }
}
