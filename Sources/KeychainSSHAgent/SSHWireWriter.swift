/// Writes RFC 4251 section 5 fields into one message.
public struct SSHWireWriter {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func writeByte(_ value: UInt8) { bytes.append(value) }

    public mutating func writeUInt32(_ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    public mutating func writeString(_ value: [UInt8]) {
        writeUInt32(UInt32(value.count))
        bytes += value
    }

    public mutating func writeText(_ value: String) { writeString(Array(value.utf8)) }

    /// A non-negative integer given as big-endian magnitude: leading zero bytes dropped, and one
    /// zero byte put back when the top bit is set so the value does not read as negative.
    public mutating func writePositiveMPInt(_ magnitude: [UInt8]) {
        let trimmed = Array(magnitude.drop { $0 == 0 })
        if let first = trimmed.first, first & 0x80 != 0 {
            writeString([0] + trimmed)
        } else {
            writeString(trimmed)
        }
    }
}
