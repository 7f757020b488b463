import KeychainModel
import KeychainCrypto
import KeychainKeys

/// An open session (`OpenSession`): which connection opened it and how secrets travel in it.
final class SecretSession {
    let number: Int
    /// The unique bus name of the connection that opened it; only that connection may use it.
    let owner: String
    /// The uid of that connection, for the per-user bound.
    let uid: UInt32
    let transport: SecretTransport

    init(number: Int, owner: String, uid: UInt32, transport: SecretTransport) {
        self.number = number
        self.owner = owner
        self.uid = uid
        self.transport = transport
    }

    var path: String { ObjectPath.session(number).string }
}

/// How a secret is carried in a `Secret` struct: its parameters and value.
protocol SecretTransport: AnyObject {
    /// The secret from a caller's parameters and value. - Throws: `BusError` when malformed.
    func open(parameters: SecureBytes, value: SecureBytes) throws -> SecureBytes
    /// Appends the parameters (`ay`) and value (`ay`) that carry `secret`.
    func append(_ secret: SecureBytes, to message: OutgoingMessage) throws
}

/// The `plain` algorithm: no parameters, the secret as it is.
final class PlainTransport: SecretTransport {
    func open(parameters: SecureBytes, value: SecureBytes) throws -> SecureBytes { value }

    func append(_ secret: SecureBytes, to message: OutgoingMessage) throws {
        try message.bytes(UnsafeRawBufferPointer(start: nil, count: 0))
        try secret.withUnsafeBytes { try message.bytes($0) }
    }
}

/// The sessions of this service, by number. Bounded per connection and per uid, so a caller
/// that opens sessions without closing them costs this process a fixed amount of memory; a
/// session ends with `Close` or when its connection leaves the bus.
struct SessionTable {
    private var sessions: [Int: SecretSession] = [:]
    private var next = 1

    /// Open sessions one connection may hold (libsecret and secretstorage open one per process).
    static let perConnection = 64
    /// Open sessions all connections of one uid may hold together.
    static let perUser = 1024

    static let limitsExceeded = BusError(name: "org.freedesktop.DBus.Error.LimitsExceeded",
                                         message: "too many open sessions: close one first")

    /// - Throws: LimitsExceeded past `perConnection` for `owner` or `perUser` for `uid`.
    mutating func open(owner: String, uid: UInt32, transport: SecretTransport) throws -> SecretSession {
        var ofOwner = 0, ofUser = 0
        for s in sessions.values where s.uid == uid {
            ofUser += 1
            if s.owner == owner { ofOwner += 1 }
        }
        guard ofOwner < Self.perConnection, ofUser < Self.perUser else { throw Self.limitsExceeded }
        let s = SecretSession(number: next, owner: owner, uid: uid, transport: transport)
        next += 1
        sessions[s.number] = s
        return s
    }

    /// The session at `path` if `sender` opened it.
    func session(at path: String, for sender: String) throws -> SecretSession {
        guard case .session(let n)? = ObjectPath(path), let s = sessions[n], s.owner == sender else { throw BusError.noSession }
        return s
    }

    mutating func close(_ n: Int) { sessions[n] = nil }

    /// Drops the sessions of a connection that left the bus.
    mutating func closeAll(of owner: String) { sessions = sessions.filter { $0.value.owner != owner } }
}

/// The `dh-ietf1024-sha256-aes128-cbc-pkcs7` algorithm: the IV as parameters, AES-128-CBC
/// ciphertext as the value (KeychainKeys' `DHAES128Session`).
final class DHAESTransport: SecretTransport {
    let session: DHAES128Session

    init(_ session: DHAES128Session) { self.session = session }

    func open(parameters: SecureBytes, value: SecureBytes) throws -> SecureBytes {
        do {
            return try parameters.withUnsafeBytes { iv in try value.withUnsafeBytes { try session.open(iv: iv, $0) } }
        } catch {
            throw BusError.invalidArgs("the secret does not decrypt in this session")
        }
    }

    func append(_ secret: SecureBytes, to message: OutgoingMessage) throws {
        let (iv, ciphertext) = try secret.withUnsafeBytes { try session.seal($0) }
        try iv.withUnsafeBytes { try message.bytes($0) }
        try ciphertext.withUnsafeBytes { try message.bytes($0) }
    }
}
