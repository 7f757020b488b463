import KeychainCore
import KeychainCrypto

/// One version of one item as the server stores it (docs/sync.md, "Record format"):
///
/// ```
/// 0   4   magic "KCSR"
/// 4   1   format 1
/// 5   1   flags: bit 0 deleted
/// 6   4   epoch (u32)
/// 10  16  writer host id
/// 26  16  item token  H_16(token key, "uuid" || uuid)
/// 42  8   version (u64)
/// 50  72  wrapped item key  AEAD(circle key, item key, AD || 01)
/// 122 n   body              AEAD(item key, padded payload, AD || 02)
/// end 64  Ed25519 signature of the writer over every byte before it
/// ```
public enum SyncRecord {
    static let magic: [UInt8] = Array("KCSR".utf8)
    static let format: UInt8 = 1
    static let headerLength = 50
    static let wrappedKeyLength = 32 + AEAD.overhead
    /// Payloads are padded to a power of two, at least this many bytes.
    static let minimumPadded = 256
    /// The longest record a host writes: the largest secret with its attributes, padded to the
    /// next power of two, and the clear fields. The server's longer ones are never fetched.
    public static let maximumLength = 2 * ItemLimits.maximumSecretLength + 4096

    /// The clear fields, as the server sees them.
    public struct Header: Equatable, Sendable {
        public var deleted: Bool
        public var epoch: UInt32
        public var writer: [UInt8]
        public var token: [UInt8]
        public var version: Int64
    }

    /// Seals a version of an item (or, with a nil payload, its tombstone) and signs it.
    /// - Throws: `CryptoError.allocationFailed`.
    public static func seal(_ payload: SyncPayload?, uuid: [UInt8], version: Int64, circle: CircleKeys,
                            writer: HostKeys) throws -> [UInt8] {
        let header = Header(deleted: payload == nil, epoch: circle.epoch, writer: writer.hostID,
                            token: circle.token(of: uuid), version: version)
        var out = encode(header)
        let plain = try paddedPayload(payload, uuid: uuid)
        defer { plain.wipe() }
        let itemKey = try SecureBytes.random(count: 32)
        defer { itemKey.wipe() }
        let ad = associatedData(header, circleID: circle.circleID)
        out += AEAD.seal(itemKey, key: circle.circleKey, associatedData: ad + [1])
        out += AEAD.seal(plain, key: itemKey, associatedData: ad + [2])
        out += try writer.sign(out)
        return out
    }

    /// The clear fields of a record. - Throws: `SyncError.malformed`.
    public static func header(of record: [UInt8]) throws -> Header {
        guard record.count >= headerLength + wrappedKeyLength + AEAD.overhead + Signature.length,
              Array(record[0..<4]) == magic, record[4] == format, record[5] & ~1 == 0
        else { throw SyncError.malformed }
        func number(_ r: Range<Int>) -> UInt64 { record[r].reduce(0) { $0 << 8 | UInt64($1) } }
        return Header(deleted: record[5] & 1 == 1, epoch: UInt32(number(6..<10)), writer: Array(record[10..<26]),
                      token: Array(record[26..<42]), version: Int64(bitPattern: number(42..<50)))
    }

    /// Checks the writer's signature, opens the record and checks that it is the item the
    /// server's row says it is. - Returns: the payload, or nil for a tombstone (whose uuid is
    /// in `uuid` either way).
    /// - Throws: `SyncError` (`.badSignature`, `.badCiphertext`, `.mismatch`, `.malformed`).
    public static func open(_ record: [UInt8], circle: CircleKeys, writerSigningKey: [UInt8],
                            expected: Header) throws -> (uuid: [UInt8], payload: SyncPayload?) {
        let header = try header(of: record)
        guard header == expected else { throw SyncError.mismatch }
        guard let circleKey = circle.key(for: header.epoch) else { throw SyncError.unknownEpoch }
        let signed = Array(record[..<(record.count - Signature.length)])
        guard Signature.verify(Array(record[(record.count - Signature.length)...]), of: signed,
                               publicKey: writerSigningKey) else { throw SyncError.badSignature }
        let ad = associatedData(header, circleID: circle.circleID)
        let keyEnd = headerLength + wrappedKeyLength
        let plain: SecureBytes
        do {
            let itemKey = try AEAD.open(Array(signed[headerLength..<keyEnd]), key: circleKey, associatedData: ad + [1])
            defer { itemKey.wipe() }
            plain = try AEAD.open(Array(signed[keyEnd...]), key: itemKey, associatedData: ad + [2])
        } catch CryptoError.allocationFailed {
            throw CryptoError.allocationFailed
        } catch {
            throw SyncError.badCiphertext
        }
        defer { plain.wipe() }
        let (uuid, payload) = try parsePayload(plain, deleted: header.deleted)
        guard circle.token(of: uuid) == header.token else {
            payload?.wipe()
            throw SyncError.mismatch
        }
        return (uuid, payload)
    }

    // MARK: Parts

    static func encode(_ h: Header) -> [UInt8] {
        var w = ByteWriter()
        w.raw(magic)
        w.u8(format)
        w.u8(h.deleted ? 1 : 0)
        w.u32(h.epoch)
        w.raw(h.writer)
        w.raw(h.token)
        w.u64(UInt64(bitPattern: h.version))
        return w.bytes
    }

    /// `"keychainfs sync v1" || circle id || token || version || epoch || flags || writer`;
    /// a last byte (1 item key, 2 body) tells the parts apart.
    static func associatedData(_ h: Header, circleID: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("keychainfs sync v1".utf8))
        w.raw(circleID)
        w.raw(h.token)
        w.u64(UInt64(bitPattern: h.version))
        w.u32(h.epoch)
        w.u8(h.deleted ? 1 : 0)
        w.raw(h.writer)
        return w.bytes
    }

    /// `uuid (16) || class || protection || u32 len || attribute blob || u32 len || secret`,
    /// zero-padded; a tombstone is the uuid alone, padded the same way.
    static func paddedPayload(_ p: SyncPayload?, uuid: [UInt8]) throws -> SecureBytes {
        precondition(uuid.count == 16)
        let length = 16 + (p.map { 2 + 4 + $0.attributes.count + 4 + $0.secret.count } ?? 0)
        var padded = minimumPadded
        while padded < length { padded <<= 1 }
        let out = try SecureBytes(count: padded)
        out.withUnsafeMutableBytes { o in
            o.copyBytes(from: uuid)
            guard let p else { return }
            var at = 16
            func put(_ bytes: [UInt8]) {
                UnsafeMutableRawBufferPointer(rebasing: o[at..<(at + bytes.count)]).copyBytes(from: bytes)
                at += bytes.count
            }
            func put(_ s: SecureBytes) {
                var n = ByteWriter()
                n.u32(UInt32(s.count))
                put(n.bytes)
                s.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: o[at..<(at + s.count)]).copyMemory(from: $0) }
                at += s.count
            }
            put([p.itemClass.code, p.protection.code])
            put(p.attributes)
            put(p.secret)
        }
        return out
    }

    static func parsePayload(_ plain: SecureBytes, deleted: Bool) throws -> ([UInt8], SyncPayload?) {
        try plain.withUnsafeBytes { b -> ([UInt8], SyncPayload?) in
            guard b.count >= 16 else { throw SyncError.malformed }
            let uuid = Array(b[0..<16])
            if deleted { return (uuid, nil) }
            guard b.count >= 16 + 2 + 4, let cls = ItemClass(code: b[16]), let pdmn = ProtectionClass(code: b[17]),
                  !pdmn.isThisDeviceOnly else { throw SyncError.malformed }
            var at = 18
            func take() throws -> SecureBytes {
                guard at + 4 <= b.count else { throw SyncError.malformed }
                let n = b[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
                at += 4
                guard n <= b.count - at else { throw SyncError.malformed }
                defer { at += n }
                return try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: b[at..<(at + n)]))
            }
            let attributes = try take()
            let secret: SecureBytes
            do { secret = try take() } catch { attributes.wipe(); throw error }
            // Padding is zeros: anything else is a record this code did not write.
            guard b[at...].allSatisfy({ $0 == 0 }) else {
                attributes.wipe()
                secret.wipe()
                throw SyncError.malformed
            }
            return (uuid, SyncPayload(uuid: uuid, itemClass: cls, protection: pdmn, attributes: attributes, secret: secret))
        }
    }
}
