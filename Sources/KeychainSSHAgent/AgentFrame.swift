/// The agent's framing: a uint32 length, then that many bytes whose first is the message number.
public enum AgentFrame {
    /// The largest message this agent reads (OpenSSH's agent uses the same 256 KiB limit). A
    /// longer one is refused before it is buffered.
    public static let maximumLength: UInt32 = 256 * 1024

    /// `payload` with its length in front.
    public static func encode(_ payload: [UInt8]) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.writeString(payload)
        return writer.bytes
    }
}

/// Collects bytes from a stream and hands out whole frames, so a client that writes a message in
/// pieces, or several at once, is read the same way.
public struct AgentFrameBuffer {
    public enum Next: Equatable {
        /// A whole message (number byte and body), its length removed.
        case frame([UInt8])
        /// Not a whole frame yet.
        case needMore
        /// The length field is zero or over the limit: the stream cannot be resynchronised, so
        /// the server answers failure and closes the connection.
        case refused(UInt32)
    }

    private var pending: [UInt8] = []

    public init() {}

    /// Bytes received but not yet handed out as a frame.
    public var bufferedCount: Int { pending.count }

    public mutating func append(_ bytes: some Sequence<UInt8>) { pending.append(contentsOf: bytes) }

    public mutating func next() -> Next {
        guard pending.count >= 4 else { return .needMore }
        let length = pending[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard length > 0, length <= AgentFrame.maximumLength else { return .refused(length) }
        guard pending.count >= 4 + Int(length) else { return .needMore }
        let frame = Array(pending[4..<4 + Int(length)])
        pending.removeFirst(4 + Int(length))
        return .frame(frame)
    }
}
