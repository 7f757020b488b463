/// Reads RFC 4251 section 5 fields (byte, uint32, string, mpint) from one message, checking every
/// length against what is left before touching it.
public typealias SSHWireReader = SSHFieldReader<[UInt8]>

/// `SSHWireReader` over any bytes indexed from zero: an array, or a guarded buffer's bytes, of
/// which a private key's fields are taken as ranges (`readStringRange`) and never copied here.
public struct SSHFieldReader<Bytes: RandomAccessCollection> where Bytes.Element == UInt8, Bytes.Index == Int {
    private let bytes: Bytes
    private var offset: Int

    public init(_ bytes: Bytes) {
        self.bytes = bytes
        self.offset = bytes.startIndex
    }

    /// Bytes not read yet.
    public var remaining: Int { bytes.endIndex - offset }

    public mutating func readByte() throws -> UInt8 {
        guard remaining >= 1 else { throw SSHAgentCodecError.truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func readUInt32() throws -> UInt32 {
        guard remaining >= 4 else { throw SSHAgentCodecError.truncated }
        defer { offset += 4 }
        return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A uint32 length then that many bytes.
    public mutating func readString() throws -> [UInt8] { Array(bytes[try readStringRange()]) }

    /// Where the next string's contents lie, without copying them.
    public mutating func readStringRange() throws -> Range<Int> {
        let length = try readUInt32()
        // Compared as UInt32 so a length near 2^32 cannot overflow Int arithmetic on any platform.
        guard length <= UInt32(remaining) else { throw SSHAgentCodecError.truncated }
        let end = offset + Int(length)
        defer { offset = end }
        return offset..<end
    }

    /// A string that must be UTF-8 (key type names, curve names, comments).
    public mutating func readText() throws -> String {
        let raw = try readString()
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw SSHAgentCodecError.malformed("text field is not UTF-8")
        }
        return text
    }

    /// A non-negative mpint as its magnitude, big-endian with no leading zero bytes (zero is empty).
    /// - Throws: `malformed` for a negative value or a non-minimal encoding (RFC 4251 forbids both
    ///   in signatures: "unnecessary leading bytes ... MUST NOT be included").
    public mutating func readPositiveMPInt() throws -> [UInt8] { Array(bytes[try readPositiveMPIntRange()]) }

    /// Where a non-negative mpint's magnitude lies (its sign byte left out), checked as
    /// `readPositiveMPInt` checks it.
    public mutating func readPositiveMPIntRange() throws -> Range<Int> {
        let range = try readStringRange()
        guard let start = range.first else { return range }
        if bytes[start] & 0x80 != 0 { throw SSHAgentCodecError.malformed("negative mpint") }
        guard bytes[start] == 0 else { return range }
        guard range.count > 1, bytes[start + 1] & 0x80 != 0 else { throw SSHAgentCodecError.malformed("mpint has a redundant leading zero") }
        return range.dropFirst()
    }

    /// - Throws: `trailingBytes` when the message has more fields than its type defines.
    public func expectEnd() throws {
        guard remaining == 0 else { throw SSHAgentCodecError.trailingBytes }
    }
}
