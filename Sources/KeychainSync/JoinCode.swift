import KeychainCore
import KeychainCrypto

/// The short code a joining host prints and a member types (docs/sync.md, "The circle").
/// Ten Crockford base32 characters, 50 random bits, stretched with Argon2id into the key that
/// authenticates and encrypts the join request and its grant: a server that swaps the keys
/// in a request, or answers with a circle of its own, cannot do it without the code.
enum JoinCode {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let length = 10

    /// A new code, grouped as `XXXXX-XXXXX`.
    static func generate() -> String {
        let random = randomBytes(length)
        let chars = random.map { alphabet[Int($0 & 31)] }
        return String(decoding: chars[0..<5], as: UTF8.self) + "-" + String(decoding: chars[5...], as: UTF8.self)
    }

    /// The code as typed, without separators, case folded, with Crockford's look-alikes mapped;
    /// nil when it is not ten code characters.
    static func normalize(_ typed: String) -> [UInt8]? {
        var out: [UInt8] = []
        for var c in typed.uppercased().utf8 where c != UInt8(ascii: "-") && c != UInt8(ascii: " ") {
            if c == UInt8(ascii: "O") { c = UInt8(ascii: "0") }
            if c == UInt8(ascii: "I") || c == UInt8(ascii: "L") { c = UInt8(ascii: "1") }
            guard alphabet.contains(c) else { return nil }
            out.append(c)
        }
        return out.count == length ? out : nil
    }

    /// Argon2id (libsodium INTERACTIVE) of the normalized code, salted with the joining host's id.
    static func key(code: [UInt8], host: [UInt8]) throws -> SecureBytes {
        let secret = try SecureBytes(copying: code)
        defer { secret.wipe() }
        return try PasswordHash.deriveKey(passphrase: secret, salt: host, parameters: .interactive)
    }

    static func requestAD(_ host: [UInt8]) -> [UInt8] { Array("keychainfs sync join v1".utf8) + host }
    static func grantAD(_ host: [UInt8]) -> [UInt8] { Array("keychainfs sync grant v1".utf8) + host }

    /// `sign key (32) || box key (32) || name`, sealed under the code's key.
    static func request(_ keys: HostKeys, name: String, key: SecureBytes) -> [UInt8] {
        let plain = keys.signPublic + keys.boxPublic + Array(name.utf8)
        return plain.withUnsafeBytes { AEAD.seal($0, key: key, associatedData: requestAD(keys.hostID)) }
    }

    static func openRequest(_ box: [UInt8], host: [UInt8], key: SecureBytes) throws -> SyncConfig.Member {
        let plain = try AEAD.open(box, key: key, associatedData: requestAD(host))
        defer { plain.wipe() }
        return try plain.withUnsafeBytes { b in
            guard b.count >= 64 else { throw SyncError.malformed }
            return SyncConfig.Member(hostID: host, signKey: Array(b[0..<32]), boxKey: Array(b[32..<64]),
                                     name: String(decoding: b[64...], as: UTF8.self))
        }
    }

    /// What a member sends back: `circle id (16) || epoch (u32) || approver (16) || u16 n ||
    /// circle secrets sealed to the joiner's box key (n) || u16 count || members`, each member
    /// `host (16) || sign key (32) || box key (32) || u32 n || name`; sealed under the code's key.
    /// Then, since epochs: `u64 epoch start || former members` (SyncConfig).
    static func grant(circle: CircleKeys, approver: [UInt8], sealedSecrets: [UInt8], members: [SyncConfig.Member],
                      epochStart: Int64, former: [SyncConfig.Former], host: [UInt8], key: SecureBytes) -> [UInt8] {
        var w = ByteWriter()
        w.raw(circle.circleID)
        w.u32(circle.epoch)
        w.raw(approver)
        w.u16(UInt16(sealedSecrets.count))
        w.raw(sealedSecrets)
        w.u16(UInt16(members.count))
        for m in members {
            w.raw(m.hostID)
            w.raw(m.signKey)
            w.raw(m.boxKey)
            w.lengthPrefixed(Array(m.name.utf8))
        }
        w.u64(UInt64(bitPattern: epochStart))
        SyncConfig.encode(former, into: &w)
        return w.bytes.withUnsafeBytes { AEAD.seal($0, key: key, associatedData: grantAD(host)) }
    }

    struct Grant {
        var circleID: [UInt8]
        var epoch: UInt32
        var approver: [UInt8]
        var sealedSecrets: [UInt8]
        var members: [SyncConfig.Member]
        var epochStart: Int64 = 0
        var former: [SyncConfig.Former] = []
    }

    static func openGrant(_ box: [UInt8], host: [UInt8], key: SecureBytes) throws -> Grant {
        let plain = try AEAD.open(box, key: key, associatedData: grantAD(host))
        defer { plain.wipe() }
        return try plain.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            var g = Grant(circleID: try r.raw(16), epoch: try r.u32(), approver: try r.raw(16), sealedSecrets: [], members: [])
            g.sealedSecrets = try r.raw(Int(try r.u16()))
            for _ in 0..<(try r.u16()) {
                g.members.append(SyncConfig.Member(hostID: try r.raw(16), signKey: try r.raw(32), boxKey: try r.raw(32),
                                                   name: String(decoding: try r.lengthPrefixed(), as: UTF8.self)))
            }
            if r.remaining > 0 {
                g.epochStart = Int64(bitPattern: try r.u64())
                g.former = try SyncConfig.readFormer(&r)
            }
            return g
        }
    }
}
