import KeychainCrypto

/// This host's identity in a circle: a random id, an Ed25519 pair that signs what it writes
/// and a box pair that circle keys are sealed to. The secret halves stay in guarded memory
/// and, on disk, sealed under a ThisDeviceOnly key (`Vault.syncSecret`).
public final class HostKeys: @unchecked Sendable {
    public let hostID: [UInt8]
    public let signPublic: [UInt8]
    public let boxPublic: [UInt8]
    let signSecret: SecureBytes
    let boxSecret: SecureBytes

    init(hostID: [UInt8], signSecret: SecureBytes, boxSecret: SecureBytes) throws {
        self.hostID = hostID
        self.signSecret = signSecret
        self.boxSecret = boxSecret
        signPublic = try Signature.publicKey(of: signSecret)
        boxPublic = try SealedBox.publicKey(of: boxSecret)
    }

    /// New keys and a new id. - Throws: `CryptoError.allocationFailed`.
    public static func generate() throws -> HostKeys {
        let sign = try Signature.keyPair(), box = try SealedBox.keyPair()
        return try HostKeys(hostID: randomBytes(16), signSecret: sign.secretKey, boxSecret: box.secretKey)
    }

    /// The stored form: `host id (16) || sign secret (64) || box secret (32)`, in guarded memory.
    public func serialized() throws -> SecureBytes {
        let out = try SecureBytes(count: 16 + Signature.secretKeyLength + SealedBox.secretKeyLength)
        out.withUnsafeMutableBytes { o in
            o.copyBytes(from: hostID)
            signSecret.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: o[16...]).copyMemory(from: $0) }
            boxSecret.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: o[(16 + Signature.secretKeyLength)...]).copyMemory(from: $0) }
        }
        return out
    }

    /// Reads `serialized()`. - Throws: `SyncError.malformed`.
    public static func parse(_ s: SecureBytes) throws -> HostKeys {
        guard s.count == 16 + Signature.secretKeyLength + SealedBox.secretKeyLength else { throw SyncError.malformed }
        return try HostKeys(hostID: s.withUnsafeBytes { Array($0[0..<16]) },
                            signSecret: s.slice(16..<(16 + Signature.secretKeyLength)),
                            boxSecret: s.slice((16 + Signature.secretKeyLength)..<s.count))
    }

    func sign(_ message: [UInt8]) throws -> [UInt8] { try Signature.sign(message, secretKey: signSecret) }

    func openSealed(_ box: [UInt8]) throws -> SecureBytes {
        try SealedBox.open(box, publicKey: boxPublic, secretKey: boxSecret)
    }

    public func wipe() {
        signSecret.wipe()
        boxSecret.wipe()
    }
}

/// A circle's keys for one epoch: the circle key wraps every record's item key; the token key
/// turns item uuids into the blind ids the server sees, and stays the same across epochs.
public final class CircleKeys: @unchecked Sendable {
    public static let secretLength = 64
    public let circleID: [UInt8]
    public let epoch: UInt32
    let circleKey: SecureBytes
    let tokenKey: SecureBytes

    init(circleID: [UInt8], epoch: UInt32, circleKey: SecureBytes, tokenKey: SecureBytes) {
        self.circleID = circleID
        self.epoch = epoch
        self.circleKey = circleKey
        self.tokenKey = tokenKey
    }

    /// A new circle: random id, epoch 1, random keys.
    public static func generate() throws -> CircleKeys {
        CircleKeys(circleID: randomBytes(16), epoch: 1, circleKey: try SecureBytes.random(count: 32),
                   tokenKey: try SecureBytes.random(count: 32))
    }

    /// `circle key (32) || token key (32)`: what is sealed to a member and stored.
    public func secrets() throws -> SecureBytes {
        let out = try SecureBytes(count: Self.secretLength)
        out.withUnsafeMutableBytes { o in
            circleKey.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: o[0..<32]).copyMemory(from: $0) }
            tokenKey.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: o[32..<64]).copyMemory(from: $0) }
        }
        return out
    }

    /// Reads `secrets()`. - Throws: `SyncError.malformed`.
    public static func parse(circleID: [UInt8], epoch: UInt32, secrets s: SecureBytes) throws -> CircleKeys {
        guard s.count == secretLength, circleID.count == 16 else { throw SyncError.malformed }
        return CircleKeys(circleID: circleID, epoch: epoch, circleKey: try s.slice(0..<32), tokenKey: try s.slice(32..<64))
    }

    /// The blind id of an item: `H_16(token key, "uuid" || uuid)`.
    public func token(of uuid: [UInt8]) -> [UInt8] {
        KeyedHash.hash(Array("uuid".utf8) + uuid, key: tokenKey, length: 16)
    }

    public func wipe() {
        circleKey.wipe()
        tokenKey.wipe()
    }
}

/// Why a record, a grant or a member entry was refused. Names no key or content.
public enum SyncError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed
    case badSignature
    case badCiphertext
    case unknownWriter
    case unknownEpoch
    case mismatch
    case notMember
    case noSuchJoin
    case server(String)

    public var description: String {
        switch self {
        case .malformed: return "malformed record"
        case .badSignature: return "bad signature"
        case .badCiphertext: return "ciphertext does not open"
        case .unknownWriter: return "writer is not a member"
        case .unknownEpoch: return "unknown circle epoch"
        case .mismatch: return "record does not match its row"
        case .notMember: return "this host is not in a circle"
        case .noSuchJoin: return "no pending join matches that code"
        case .server(let m): return "server: \(m)"
        }
    }
}
