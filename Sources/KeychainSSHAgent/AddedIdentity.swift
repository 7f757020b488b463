/// SSH_AGENTC_ADD_IDENTITY and ADD_ID_CONSTRAINED (draft-miller-ssh-agent sections 4.2 and 4.2.6):
/// a private key, its comment and its constraints. The private fields are given as ranges of the
/// message, so the caller can copy them straight into guarded memory; nothing secret is copied here.
public struct AddedIdentity: Equatable, Sendable {
    public enum Key: Equatable, Sendable {
        /// The curve, the public point Q and where the private scalar d lies.
        case ecdsa(curve: ECDSACurve, point: [UInt8], scalar: Range<Int>)
        /// The public key A and where `k || A` (the 32-byte seed, then A) lies.
        case ed25519(publicKey: [UInt8], secret: Range<Int>)
        /// The public exponent and modulus, and where d, iqmp, p and q lie.
        case rsa(exponent: [UInt8], modulus: [UInt8], d: Range<Int>, iqmp: Range<Int>, p: Range<Int>, q: Range<Int>)
    }

    public var key: Key
    /// The key's public half, as the identities answer will list it.
    public var publicKey: SSHPublicKey
    public var comment: String
    /// `ssh-add -t`: seconds the key may be used for.
    public var lifetime: UInt32?
    /// `ssh-add -c`: each use must be confirmed.
    public var confirm = false
    /// `ssh-add -h`: the hosts the key may be used at.
    public var destinations: DestinationRestriction?
    /// Extension constraints this agent does not know, by name.
    public var extensions: [String] = []

    /// The constraint numbers of section 4.2.6.
    static let lifetimeConstraint: UInt8 = 1
    static let confirmConstraint: UInt8 = 2
    static let extensionConstraint: UInt8 = 255

    /// Decodes a message body: everything after the message number.
    /// - Throws: `unsupportedKeyType` for a key type this agent does not store; `malformed`,
    ///   `truncated` or `trailingBytes` for anything else that is not the message's layout.
    public static func decode<Bytes>(_ body: Bytes, constrained: Bool) throws -> AddedIdentity
    where Bytes: RandomAccessCollection, Bytes.Element == UInt8, Bytes.Index == Int {
        var reader = SSHFieldReader(body)
        let keyType = String(decoding: body[try reader.readStringRange()], as: UTF8.self)
        let key: Key
        let publicKey: SSHPublicKey
        if keyType == "ssh-ed25519" {
            let a = Array(body[try reader.readStringRange()])
            let secret = try reader.readStringRange()
            guard a.count == 32, secret.count == 64, body[secret.suffix(32)].elementsEqual(a) else {
                throw SSHAgentCodecError.malformed("an Ed25519 key is a 32-byte public key and 64 bytes of seed and public key")
            }
            key = .ed25519(publicKey: a, secret: secret)
            publicKey = .ed25519(a)
        } else if keyType == "ssh-rsa" {
            let modulus = Array(body[try reader.readPositiveMPIntRange()])
            let exponent = Array(body[try reader.readPositiveMPIntRange()])
            let d = try reader.readPositiveMPIntRange(), iqmp = try reader.readPositiveMPIntRange()
            let p = try reader.readPositiveMPIntRange(), q = try reader.readPositiveMPIntRange()
            publicKey = try SSHPublicKey(rsaExponent: exponent, modulus: modulus)
            // Each private field is below the modulus, which bounds the work of storing the key.
            guard [d, iqmp, p, q].allSatisfy({ !$0.isEmpty && $0.count <= modulus.count }) else {
                throw SSHAgentCodecError.malformed("RSA key fields")
            }
            key = .rsa(exponent: exponent, modulus: modulus, d: d, iqmp: iqmp, p: p, q: q)
        } else if let curve = ECDSACurve(keyType: keyType) {
            guard String(decoding: body[try reader.readStringRange()], as: UTF8.self) == curve.rawValue else {
                throw SSHAgentCodecError.malformed("curve name does not match \(keyType)")
            }
            let point = try SSHPublicKeyBlob(uncompressedPoint: Array(body[try reader.readStringRange()]))
            let scalar = try reader.readPositiveMPIntRange()
            guard point.curve == curve, !scalar.isEmpty, scalar.count <= curve.coordinateLength else {
                throw SSHAgentCodecError.malformed("ECDSA key fields do not fit \(curve.rawValue)")
            }
            key = .ecdsa(curve: curve, point: point.point, scalar: scalar)
            publicKey = .ecdsa(point)
        } else {
            throw SSHAgentCodecError.unsupportedKeyType(keyType)
        }
        let commentRange = try reader.readStringRange()
        guard let comment = String(validating: body[commentRange], as: UTF8.self) else {
            throw SSHAgentCodecError.malformed("comment is not UTF-8")
        }
        var added = AddedIdentity(key: key, publicKey: publicKey, comment: comment)
        guard constrained else {
            try reader.expectEnd()
            return added
        }
        while reader.remaining > 0 {
            switch try reader.readByte() {
            case lifetimeConstraint:
                added.lifetime = try reader.readUInt32()
            case confirmConstraint:
                added.confirm = true
            case extensionConstraint:
                let name = String(decoding: body[try reader.readStringRange()], as: UTF8.self)
                if name == DestinationRestriction.extensionName {
                    guard added.destinations == nil else { throw SSHAgentCodecError.malformed("destinations given twice") }
                    added.destinations = try DestinationRestriction(encoded: Array(body[try reader.readStringRange()]))
                    continue
                }
                added.extensions.append(name)
                // An extension's contents run to the end of the message or to the next
                // constraint, and only the extension knows which: none after it can be read.
                return added
            case let other:
                throw SSHAgentCodecError.malformed("unknown constraint \(other)")
            }
        }
        return added
    }
}
