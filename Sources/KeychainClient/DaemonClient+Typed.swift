import KeychainProtocol

extension DaemonClient {
    /// Sends a typed request and reads the reply as its operation's reply type.
    /// - Throws: the reply's status when it is not success, as `send` does.
    public func call<Reply: TypedReply>(_ request: some TypedRequest, _ reply: Reply.Type) throws -> Reply {
        try Reply(decoding: send(request.request))
    }

    /// The vault's state as this caller may see it (`info`).
    public func status() throws -> VaultStatus {
        try call(BareRequest(.info), VaultStatus.self)
    }
}
