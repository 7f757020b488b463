/// One identity in SSH_AGENT_IDENTITIES_ANSWER.
public struct AgentIdentity: Equatable, Sendable {
    public var keyBlob: [UInt8]
    public var comment: String

    public init(keyBlob: [UInt8], comment: String) {
        self.keyBlob = keyBlob
        self.comment = comment
    }
}

/// A reply from the agent to its client.
public enum AgentResponse: Equatable, Sendable {
    case failure
    case success
    case identities([AgentIdentity])
    /// `signatureBlob` as `SSHSignatureBlob` encodes it.
    case signature([UInt8])

    /// The frame payload (message number and body), without the length.
    public func encoded() -> [UInt8] {
        var writer = SSHWireWriter()
        switch self {
        case .failure:
            writer.writeByte(AgentMessageNumber.failure.rawValue)
        case .success:
            writer.writeByte(AgentMessageNumber.success.rawValue)
        case .identities(let identities):
            writer.writeByte(AgentMessageNumber.identitiesAnswer.rawValue)
            writer.writeUInt32(UInt32(identities.count))
            for identity in identities {
                writer.writeString(identity.keyBlob)
                writer.writeText(identity.comment)
            }
        case .signature(let blob):
            writer.writeByte(AgentMessageNumber.signResponse.rawValue)
            writer.writeString(blob)
        }
        return writer.bytes
    }

    /// The whole frame, length first, ready to write to the socket.
    public func framed() -> [UInt8] { AgentFrame.encode(encoded()) }
}
