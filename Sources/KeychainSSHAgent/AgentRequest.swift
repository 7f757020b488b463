/// A message from an agent client, decoded from one frame.
public enum AgentRequest: Equatable, Sendable {
    case requestIdentities
    /// `keyBlob` is the public key blob the client picked from the identities answer; `data` is
    /// what to sign (for a login, the session identifier and the user-auth request).
    case sign(keyBlob: [UInt8], data: [UInt8], flags: AgentSignFlags)
    /// ADD_IDENTITY and its constrained form; the private key in it is not kept by the decoder.
    case addIdentity(constrained: Bool)
    case removeIdentity(keyBlob: [UInt8])
    case removeAllIdentities
    /// The smartcard messages (PKCS#11 providers), with their fields dropped.
    case smartcard(AgentMessageNumber)
    /// LOCK and UNLOCK; the passphrase is not kept by the decoder.
    case lock
    case unlock
    /// `session-bind@openssh.com`, decoded.
    case sessionBind(SessionBind)
    /// Any other extension, by name; its contents are not read.
    case `extension`(name: String)
    /// A message number this protocol does not define.
    case unknown(UInt8)

    /// Decodes one frame (the bytes after the length).
    /// - Throws: `SSHAgentCodecError` for an empty frame, a field that runs past the end, or bytes
    ///   after the last field of a message whose layout is fixed.
    public static func decode(_ frame: [UInt8]) throws -> AgentRequest {
        var reader = SSHWireReader(frame)
        let number = try reader.readByte()
        guard let known = AgentMessageNumber(rawValue: number) else { return .unknown(number) }
        let request: AgentRequest
        switch known {
        case .requestIdentities:
            request = .requestIdentities
        case .signRequest:
            let blob = try reader.readString()
            let data = try reader.readString()
            request = .sign(keyBlob: blob, data: data, flags: AgentSignFlags(rawValue: try reader.readUInt32()))
        case .addIdentity, .addIdentityConstrained:
            // Key type then type-specific fields and constraints: the layout depends on the key,
            // so the rest is not walked; nothing of it is stored.
            _ = try reader.readText()
            return .addIdentity(constrained: known == .addIdentityConstrained)
        case .removeIdentity:
            request = .removeIdentity(keyBlob: try reader.readString())
        case .removeAllIdentities:
            request = .removeAllIdentities
        case .addSmartcardKey, .removeSmartcardKey, .addSmartcardKeyConstrained:
            return .smartcard(known)
        case .lock, .unlock:
            _ = try reader.readString()
            request = known == .lock ? .lock : .unlock
        case .extension:
            // The extension's own contents follow its name and are defined by the extension.
            let name = try reader.readText()
            guard name == SessionBind.extensionName else { return .extension(name: name) }
            request = .sessionBind(try SessionBind(&reader))
        case .failure, .success, .identitiesAnswer, .signResponse, .extensionFailure:
            // Replies sent to the agent: not requests.
            return .unknown(number)
        }
        try reader.expectEnd()
        return request
    }
}
