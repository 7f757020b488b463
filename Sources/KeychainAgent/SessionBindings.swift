import KeychainSSHAgent

/// The hosts one client connection has been bound to (`session-bind@openssh.com`), in order: the
/// path the agent is used along, checked against each destination-restricted key (`ssh-add -h`)
/// as OpenSSH's agent checks it.
struct SessionBindings {
    struct Binding {
        let hostKey: [UInt8]
        let sessionID: [UInt8]
        let isForwarding: Bool
    }

    /// OpenSSH's agent records at most 16 hops per connection.
    static let limit = 16
    private(set) var hops: [Binding] = []
    /// ssh tried to bind this connection: even when that failed, it is not local use.
    private(set) var attempted = false

    /// Records a binding whose signature the host key made (`hostSigned` checks it); false (the
    /// agent's failure reply) for a bad signature, a connection already bound to log in, an
    /// identifier bound to another key, or too many hops.
    mutating func bind(_ bind: SessionBind, hostSigned: (SessionBind) -> Bool) -> Bool {
        attempted = true
        guard hostSigned(bind) else { return false }
        for hop in hops {
            // Only a forwarding hop may be followed by another.
            guard hop.isForwarding else { return false }
            if hop.sessionID == bind.sessionID { return hop.hostKey == bind.hostKey }
        }
        guard hops.count < Self.limit else { return false }
        hops.append(Binding(hostKey: bind.hostKey, sessionID: bind.sessionID, isForwarding: bind.isForwarding))
        return true
    }

    /// Whether a key with these restrictions may be listed on this connection (`user` nil), or
    /// sign a login as `user`. A connection ssh never tried to bind is local use, always allowed.
    func permit(_ restriction: DestinationRestriction?, user: String?) -> Bool {
        guard let restriction else { return true }
        // A binding that failed (a host key that could not be checked) hides restricted keys too.
        guard let last = hops.last else { return !attempted }
        var from: [UInt8]? = nil
        for (i, hop) in hops.enumerated() {
            let isLast = i == hops.count - 1
            if isLast, hop.isForwarding, user != nil { return false }  // a login on a forwarding hop
            if !isLast, !hop.isForwarding { return false }  // forwarded on past a login
            guard restriction.permits(from: from, to: hop.hostKey, user: isLast ? user : nil) else { return false }
            from = hop.hostKey
        }
        // Listed past a forwarding hop only when the key may be used beyond that host.
        if last.isForwarding, user == nil, !restriction.permits(from: last.hostKey, to: nil, user: nil) { return false }
        return true
    }

    /// Whether a restricted key may sign `data`: a login to the host this connection was bound to
    /// last, in that session, as a user and through hosts its restrictions allow.
    func permitSigning(_ data: [UInt8], with restriction: DestinationRestriction, keyBlob: [UInt8]) -> Bool {
        guard let last = hops.last, let request = try? UserAuthRequest(parsing: data), request.keyBlob == keyBlob,
              permit(restriction, user: request.user), request.sessionID == last.sessionID else { return false }
        // Past the first hop the request must name the host key, and it must be the last bound.
        if let hostKey = request.hostKey { return hostKey == last.hostKey }
        return hops.count == 1
    }
}
