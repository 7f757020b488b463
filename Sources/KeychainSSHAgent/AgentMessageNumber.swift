/// Message numbers of the agent protocol (draft-miller-ssh-agent section 6.1).
public enum AgentMessageNumber: UInt8, Sendable {
    case failure = 5
    case success = 6
    case requestIdentities = 11
    case identitiesAnswer = 12
    case signRequest = 13
    case signResponse = 14
    case addIdentity = 17
    case removeIdentity = 18
    case removeAllIdentities = 19
    case addSmartcardKey = 20
    case removeSmartcardKey = 21
    case lock = 22
    case unlock = 23
    case addIdentityConstrained = 25
    case addSmartcardKeyConstrained = 26
    case `extension` = 27
    case extensionFailure = 28
}

/// Flags of SSH_AGENTC_SIGN_REQUEST (draft-miller-ssh-agent section 6.5.1); they only choose the
/// hash of an RSA signature.
public struct AgentSignFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let rsaSHA2_256 = AgentSignFlags(rawValue: 2)
    public static let rsaSHA2_512 = AgentSignFlags(rawValue: 4)
}
