/// Reads the few DER structures the agent meets (an ECDSA signature from the daemon, a PKCS#1
/// RSA public key): definite lengths only, every length checked against what is left.
struct DERReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    /// The contents of the next element, which must have `tag`.
    mutating func element(tag: UInt8) throws -> [UInt8] {
        guard bytes.count - offset >= 2, bytes[offset] == tag else { throw SSHAgentCodecError.malformed("DER tag") }
        var length = Int(bytes[offset + 1])
        offset += 2
        if length & 0x80 != 0 {
            // Long form. A 16,384-bit RSA modulus needs two length bytes; more is not a key here.
            let count = length & 0x7f
            guard (1...2).contains(count), bytes.count - offset >= count else { throw SSHAgentCodecError.malformed("DER length") }
            length = bytes[offset..<offset + count].reduce(0) { $0 << 8 | Int($1) }
            offset += count
        }
        guard length <= bytes.count - offset else { throw SSHAgentCodecError.malformed("DER element runs past the end") }
        defer { offset += length }
        return Array(bytes[offset..<offset + length])
    }

    /// The magnitude of the next INTEGER, which must be positive: its sign byte dropped.
    mutating func positiveInteger() throws -> [UInt8] {
        let contents = try element(tag: 0x02)
        guard let first = contents.first, first & 0x80 == 0 else { throw SSHAgentCodecError.malformed("DER integer is empty or negative") }
        let magnitude = Array(contents.drop { $0 == 0 })
        guard !magnitude.isEmpty else { throw SSHAgentCodecError.malformed("DER integer is zero") }
        return magnitude
    }

    /// A SEQUENCE that must be all of `bytes`, as a reader of its contents.
    static func sequence(_ bytes: [UInt8]) throws -> DERReader {
        var outer = DERReader(bytes)
        let contents = try outer.element(tag: 0x30)
        guard outer.isAtEnd else { throw SSHAgentCodecError.malformed("bytes after the DER sequence") }
        return DERReader(contents)
    }
}
