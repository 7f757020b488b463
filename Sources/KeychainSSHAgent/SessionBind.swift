/// `session-bind@openssh.com` (OpenSSH's PROTOCOL.agent section 1): after its key exchange, ssh
/// tells the agent which host it reached, with the host's signature of the session identifier,
/// so destination-restricted keys can be checked against the hosts on the path.
public struct SessionBind: Equatable, Sendable {
    public static let extensionName = "session-bind@openssh.com"
    /// OpenSSH's agent takes identifiers of up to 128 bytes (the exchange hash of SHA-512 is 64).
    public static let maximumSessionIDLength = 128

    /// The server's host key blob.
    public var hostKey: [UInt8]
    /// The exchange hash of the session's first key exchange.
    public var sessionID: [UInt8]
    /// The host key's signature of `sessionID`, a signature blob (string algorithm, string bytes).
    public var signature: [UInt8]
    /// The connection is bound to forward the agent on, not to log in with it.
    public var isForwarding: Bool

    /// Decodes the fields after the extension's name.
    /// - Throws: `malformed` for an empty or over-long identifier or a flag other than 0 or 1.
    public init(_ reader: inout SSHWireReader) throws {
        hostKey = try reader.readString()
        sessionID = try reader.readString()
        signature = try reader.readString()
        let flag = try reader.readByte()
        guard flag <= 1 else { throw SSHAgentCodecError.malformed("is_forwarding flag") }
        isForwarding = flag == 1
        guard !sessionID.isEmpty, sessionID.count <= Self.maximumSessionIDLength else {
            throw SSHAgentCodecError.malformed("session identifier length")
        }
    }

    public init(hostKey: [UInt8], sessionID: [UInt8], signature: [UInt8], isForwarding: Bool) {
        self.hostKey = hostKey
        self.sessionID = sessionID
        self.signature = signature
        self.isForwarding = isForwarding
    }
}

/// What ssh asks the agent to sign for a login (RFC 4252 section 7): the session identifier and
/// an SSH_MSG_USERAUTH_REQUEST for the public key method, or OpenSSH's host-bound variant, which
/// also names the server's host key.
public struct UserAuthRequest: Equatable, Sendable {
    public var sessionID: [UInt8]
    public var user: String
    public var keyBlob: [UInt8]
    /// The server's host key, for `publickey-hostbound-v00@openssh.com`.
    public var hostKey: [UInt8]?

    static let userAuthRequest: UInt8 = 50

    /// - Throws: `malformed` for data that is not such a request (an `SSHSIG` blob, say).
    public init(parsing data: [UInt8]) throws {
        var reader = SSHWireReader(data)
        sessionID = try reader.readString()
        guard try reader.readByte() == Self.userAuthRequest else { throw SSHAgentCodecError.malformed("not a user-auth request") }
        user = try reader.readText()
        guard try reader.readText() == "ssh-connection" else { throw SSHAgentCodecError.malformed("service") }
        let method = try reader.readText()
        let hostBound = method == "publickey-hostbound-v00@openssh.com"
        guard hostBound || method == "publickey" else { throw SSHAgentCodecError.malformed("method") }
        guard try reader.readByte() == 1 else { throw SSHAgentCodecError.malformed("no signature follows") }
        _ = try reader.readText()  // the signature algorithm
        keyBlob = try reader.readString()
        hostKey = hostBound ? try reader.readString() : nil
        try reader.expectEnd()
    }
}
