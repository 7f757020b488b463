/// Why bytes from an agent client were not a message; every case is answered with
/// SSH_AGENT_FAILURE, never a crash.
public enum SSHAgentCodecError: Error, Equatable, Sendable {
    /// A field runs past the end of its message.
    case truncated
    /// Bytes left over after the last field of a message.
    case trailingBytes
    /// A frame longer than `AgentFrame.maximumLength`, or empty.
    case badFrameLength(UInt32)
    /// A field that is well-framed but wrong: an mpint with a redundant leading byte, a curve
    /// name that does not match its key type, an EC point that is not uncompressed.
    case malformed(String)
    /// A key or signature type this agent does not speak.
    case unsupportedKeyType(String)
}
