import KeychainCore
import KeychainCrypto
import Synchronization

/// This host's identity in a circle: a random id, an Ed25519 pair that signs what it writes
/// and a box pair that circle keys are sealed to. The secret halves stay in guarded memory
/// and, on disk, sealed under a ThisDeviceOnly key (`Vault.syncSecret`).
public final class HostKeys: Sendable {
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

/// A circle's keys: one circle key per epoch, which wraps every record's item key of that
/// epoch, and the token key, which turns item uuids into the blind ids the server sees and
/// stays the same across epochs. A host keeps the keys of every epoch it was a member in, to
/// read the log written before; it writes with the newest only (`sync remove` makes a new one).
public final class CircleKeys: Sendable {
    public let circleID: [UInt8]
    let tokenKey: SecureBytes

    /// The epochs' keys, which `adopt` adds to.
    private struct Epochs: Sendable {
        /// The newest epoch: what this host writes with.
        var newest: UInt32
        var keys: [UInt32: SecureBytes]
    }
    private let epochs: Mutex<Epochs>

    init(circleID: [UInt8], epoch: UInt32, circleKey: SecureBytes, tokenKey: SecureBytes) {
        self.circleID = circleID
        epochs = Mutex(Epochs(newest: epoch, keys: [epoch: circleKey]))
        self.tokenKey = tokenKey
    }

    /// The newest epoch: what this host writes with.
    public var epoch: UInt32 { epochs.withLock { $0.newest } }

    /// A new circle: random id, epoch 1, random keys.
    public static func generate() throws -> CircleKeys {
        CircleKeys(circleID: randomBytes(16), epoch: 1, circleKey: try SecureBytes.random(count: 32),
                   tokenKey: try SecureBytes.random(count: 32))
    }

    /// The newest epoch's circle key.
    var circleKey: SecureBytes { epochs.withLock { $0.keys[$0.newest]! } }

    /// The circle key of an epoch; nil for one this host was never given.
    func key(for epoch: UInt32) -> SecureBytes? { epochs.withLock { $0.keys[epoch] } }

    /// Takes the key of a newer epoch, which becomes the one written with.
    func adopt(epoch newEpoch: UInt32, key: SecureBytes) {
        epochs.withLock {
            precondition(newEpoch > $0.newest && key.count == 32)
            $0.keys[newEpoch] = key
            $0.newest = newEpoch
        }
    }

    /// `token key (32) || n × (epoch u32 || circle key 32)`: what is sealed to a joining
    /// member and stored (`sync.circle`).
    public func secrets() throws -> SecureBytes {
        let keys = self.epochs.withLock { $0.keys }
        let epochs = keys.keys.sorted()
        let out = try SecureBytes(count: 32 + 36 * epochs.count)
        out.withUnsafeMutableBytes { o in
            tokenKey.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: o[0..<32]).copyMemory(from: $0) }
            for (i, e) in epochs.enumerated() {
                let at = 32 + 36 * i
                var w = ByteWriter()
                w.u32(e)
                UnsafeMutableRawBufferPointer(rebasing: o[at..<(at + 4)]).copyBytes(from: w.bytes)
                keys[e]!.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: o[(at + 4)..<(at + 36)]).copyMemory(from: $0) }
            }
        }
        return out
    }

    /// Reads `secrets()`, or the first slice's `circle key (32) || token key (32)` of one epoch
    /// (`epoch`). - Throws: `SyncError.malformed`.
    public static func parse(circleID: [UInt8], epoch: UInt32, secrets s: SecureBytes) throws -> CircleKeys {
        guard circleID.count == 16 else { throw SyncError.malformed }
        if s.count == 64 {
            return CircleKeys(circleID: circleID, epoch: epoch, circleKey: try s.slice(0..<32), tokenKey: try s.slice(32..<64))
        }
        guard s.count >= 32 + 36, (s.count - 32) % 36 == 0 else { throw SyncError.malformed }
        var entries: [(UInt32, SecureBytes)] = []
        for i in 0..<((s.count - 32) / 36) {
            let at = 32 + 36 * i
            let e = s.withUnsafeBytes { b in b[at..<(at + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
            entries.append((e, try s.slice((at + 4)..<(at + 36))))
        }
        entries.sort { $0.0 < $1.0 }
        guard let first = entries.first, Set(entries.map(\.0)).count == entries.count else { throw SyncError.malformed }
        let c = CircleKeys(circleID: circleID, epoch: first.0, circleKey: first.1, tokenKey: try s.slice(0..<32))
        for (e, k) in entries.dropFirst() { c.adopt(epoch: e, key: k) }
        return c
    }

    /// The blind id of an item: `H_16(token key, "uuid" || uuid)`.
    public func token(of uuid: [UInt8]) -> [UInt8] {
        KeyedHash.hash(Array("uuid".utf8) + uuid, key: tokenKey, length: 16)
    }

    public func wipe() {
        for k in epochs.withLock({ $0.keys.values }) { k.wipe() }
        tokenKey.wipe()
    }
}

/// Why a record, a grant or a member entry was refused. Names no key or content.
public enum SyncError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed
    /// A record of this many bytes: longer than any host writes (`SyncRecord.maximumLength`).
    case tooLong(Int)
    case badSignature
    case badCiphertext
    case unknownWriter
    case unknownEpoch
    case staleEpoch
    case mismatch
    case notMember
    case noSuchJoin
    case noSuchMember
    case circleChanged
    case server(String)

    public var description: String {
        switch self {
        case .malformed: return "malformed record"
        case .tooLong(let n): return "record of \(n) bytes, longer than any host writes (\(SyncRecord.maximumLength))"
        case .badSignature: return "bad signature"
        case .badCiphertext: return "ciphertext does not open"
        case .unknownWriter: return "writer is not a member"
        case .unknownEpoch: return "unknown circle epoch (a key this host was not given)"
        case .staleEpoch: return "written with the key of an epoch that had ended"
        case .mismatch: return "record does not match its row"
        case .notMember: return "this host is not in a circle"
        case .noSuchJoin: return "no pending join matches that code"
        case .noSuchMember: return "no other member has that name or id"
        case .circleChanged: return "another member changed the circle first; try again"
        case .server(let m): return "server: \(m)"
        }
    }
}
