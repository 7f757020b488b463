/// `ssh-add -h`: the hosts a key may be used at (OpenSSH's PROTOCOL.agent section 2, the key
/// constraint `restrict-destination-v00@openssh.com`). Each constraint names one hop, from a host
/// (none: the machine the agent runs on) to a host, by the keys those hosts present.
public struct DestinationRestriction: Equatable, Sendable {
    public static let extensionName = "restrict-destination-v00@openssh.com"

    /// One end of a hop: a user (only on the "to" side), a host name (shown, not matched) and the
    /// host keys that identify the host.
    public struct Hop: Equatable, Sendable {
        public var user: String?
        public var hostname: String?
        /// Key blobs, each with whether it is a certificate authority's.
        public var keys: [(blob: [UInt8], isAuthority: Bool)]

        public static func == (a: Hop, b: Hop) -> Bool {
            a.user == b.user && a.hostname == b.hostname
                && a.keys.elementsEqual(b.keys) { $0.blob == $1.blob && $0.isAuthority == $1.isAuthority }
        }

        /// Whether `hostKey` is one of the hop's plain keys. A certificate authority's entry
        /// matches nothing: host certificates are not checked here, so such a hop is refused.
        func lists(_ hostKey: [UInt8]) -> Bool {
            keys.contains { !$0.isAuthority && $0.blob == hostKey }
        }
    }

    public struct Constraint: Equatable, Sendable {
        public var from: Hop
        public var to: Hop
    }

    public var constraints: [Constraint]
    /// The constraint's contents as sent, kept with the key and decoded again when it is used.
    public let encoded: [UInt8]

    /// Decodes the string that follows the extension's name.
    /// - Throws: `SSHAgentCodecError.malformed` for a hop OpenSSH's agent would also refuse: a
    ///   "from" user, a "from" host without keys or keys without a host, a "to" without a host or
    ///   keys, reserved fields that are not empty; `truncated` or `trailingBytes`.
    public init(encoded: [UInt8]) throws {
        self.encoded = encoded
        var reader = SSHWireReader(encoded)
        constraints = []
        while reader.remaining > 0 {
            var constraint = SSHWireReader(try reader.readString())
            let from = try Self.hop(try constraint.readString())
            let to = try Self.hop(try constraint.readString())
            guard try constraint.readString().isEmpty else { throw SSHAgentCodecError.malformed("reserved constraint field") }
            try constraint.expectEnd()
            guard from.user == nil, (from.hostname == nil) == from.keys.isEmpty else {
                throw SSHAgentCodecError.malformed("inconsistent \"from\" hop")
            }
            guard to.hostname != nil, !to.keys.isEmpty else { throw SSHAgentCodecError.malformed("incomplete \"to\" hop") }
            constraints.append(Constraint(from: from, to: to))
        }
        guard !constraints.isEmpty else { throw SSHAgentCodecError.malformed("no destination constraint") }
    }

    private static func hop(_ bytes: [UInt8]) throws -> Hop {
        var reader = SSHWireReader(bytes)
        let user = try reader.readText(), hostname = try reader.readText()
        guard try reader.readString().isEmpty else { throw SSHAgentCodecError.malformed("reserved hop field") }
        var keys: [(blob: [UInt8], isAuthority: Bool)] = []
        while reader.remaining > 0 {
            let blob = try reader.readString()
            let isAuthority = try reader.readByte()
            guard isAuthority <= 1 else { throw SSHAgentCodecError.malformed("key flag") }
            keys.append((blob, isAuthority == 1))
        }
        return Hop(user: user.isEmpty ? nil : user, hostname: hostname.isEmpty ? nil : hostname, keys: keys)
    }

    /// Whether one constraint allows the hop from `from` (nil: this machine) to `to` (nil: any
    /// host, when asking whether the key may be forwarded on), as `user` when one is given.
    public func permits(from: [UInt8]?, to: [UInt8]?, user: String?) -> Bool {
        constraints.contains { c in
            if let from {
                guard c.from.lists(from) else { return false }
            } else {
                guard c.from.hostname == nil, c.from.keys.isEmpty else { return false }
            }
            if let to, !c.to.lists(to) { return false }
            if let pattern = c.to.user, let user, !Self.matches(user, pattern: pattern) { return false }
            return true
        }
    }

    /// OpenSSH's user patterns: `*` any run of characters, `?` any one character.
    public static func matches(_ text: String, pattern: String) -> Bool {
        let t = Array(text.unicodeScalars), p = Array(pattern.unicodeScalars)
        var ti = 0, pi = 0, star = -1, mark = 0
        while ti < t.count {
            if pi < p.count, p[pi] == "?" || p[pi] == t[ti] {
                ti += 1
                pi += 1
            } else if pi < p.count, p[pi] == "*" {
                star = pi
                mark = ti
                pi += 1
            } else if star >= 0 {
                pi = star + 1
                mark += 1
                ti = mark
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
