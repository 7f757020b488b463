import KeychainModel
import KeychainCrypto

/// The daemon's socket protocol: every message type and its encoding, in this one file.
///
/// A frame is a big-endian u32 payload length (at most `Frame.maximumLength`) and the payload.
/// Request payload:  u16 version, u8 operation, record query, record changes, record options,
///                   u8 secret count, each secret as u32 length + bytes.
/// Response payload: u16 version, i32 status, u8 shape (0 none, 1 one value, 2 array),
///                   u32 value count, values, record info.
/// Value:            u8 kind (1 data, 2 persistent ref, 3 item), record attributes,
///                   u8 has-secret [u32 len + bytes], u8 has-ref [u32 len + bytes].
/// A record is `AttributeCoding`'s encoding of an attribute dictionary; the options record's
/// names are `OptionKey`s (OptionKey.swift).
/// A `lookup` request (an `ItemLookup`) has its own payload after the operation, no records:
///                   u8 class (1 genp, 2 inet), u8 returns (bit 0 data, 1 attributes,
///                   2 persistent ref), u8 value count, the class's primary-key attributes'
///                   values in its order (each a record's value: u8 tag and its bytes),
///                   u8 has-group [u32 len + UTF-8 access group].
public enum WireProtocol {
    /// Bumped on any incompatible change; the daemon answers other versions with errSecBadReq.
    public static let version: UInt16 = 1
}

/// Request operations; codes are frozen.
public enum Operation: UInt8, Sendable, CaseIterable {
    case ping = 1
    case unlock = 2
    case lock = 3
    case info = 4
    /// SecItemAdd. Option `generate` "private" and no secret: the daemon makes the key item's
    /// private key itself (`SecKeyCreateRandomKey` of a permanent key); an older daemon stores
    /// the item without one, which the client deletes again.
    case add = 5
    case copyMatching = 6
    case update = 7
    case delete = 8
    case changePassphrase = 9
    case setSettings = 10
    case groupAdd = 11
    case groupSet = 12
    case groupList = 13
    case groupRemove = 14
    case stop = 15
    case mount = 16
    case unmount = 17
    case audit = 18
    case export = 19
    case `import` = 20
    /// Keeps the connection open and sends one response per change (`keychainfs watch`).
    case watch = 21
    /// A full integrity check of the vault and the audit chain (`keychainfs verify`).
    case verify = 22
    /// An operation with a stored private key, run by the daemon (`SecKeyCreateSignature`,
    /// `SecKeyCreateDecryptedData`, `SecKeyCopyKeyExchangeResult` on a key from the keychain).
    /// A `KeyUseRequest`: query `v_PersistentRef` of the key item; options `use`, `algorithm`,
    /// and for a key exchange `peer`, `requestedSize`, `sharedInfo` (OptionKey.swift). One
    /// secret: the input (data to sign, ciphertext; empty for a key exchange).
    /// Reply: one data value, the signature, plaintext or shared secret.
    case useKey = 23
    /// How long requests waited inside the daemon and how long they ran, owner's and root's
    /// apart from everyone else's (`ServiceTimesRequest`, `ServiceTimes`). Administrators only.
    case serviceTimes = 24
    /// Whether a public key made a signature (`SignatureCheck`): for clients that link no
    /// library for the key's type (the SSH agent, checking a host's session-bind signature).
    /// Reply: success, or errSecVerifyFailed.
    case checkSignature = 25
    /// A `copyMatching` of one password by its class's whole primary key, typed (`ItemLookup`):
    /// what `SecItemCopyMatching`, `find-generic-password -w` and the bench send most. The
    /// daemon answers it exactly as the same query sent as `copyMatching`; `DaemonClient`
    /// sends every query of that shape this way, and the general way to a daemon that
    /// answers errSecBadReq (one from before this operation).
    case lookup = 26
    /// Fleet sync's circle verbs (`keychainfs sync`), a `SyncRequest`; option `verb` names it.
    case sync = 30
}

/// A request. Secrets (item data, passphrases) travel only in `secrets`, in guarded memory.
public struct Request: Sendable {
    public var operation: Operation
    public var query: Attributes
    public var changes: Attributes
    /// Named by `OptionKey` (the table of every option and the operation that reads it).
    public var options: Options
    public var secrets: [SecureBytes]
    /// A descriptor passed with the request (SCM_RIGHTS), never encoded: the /dev/fuse of a
    /// mount the caller has made.
    public var descriptor: PassedDescriptor?
    /// A `lookup`'s typed payload; nil for every other operation.
    public var lookup: ItemLookup?

    public init(_ operation: Operation, query: Attributes = [:], changes: Attributes = [:],
                options: Options = [:], secrets: [SecureBytes] = []) {
        self.operation = operation
        self.query = query
        self.changes = changes
        self.options = options
        self.secrets = secrets
    }

    /// A `lookup` request.
    public init(_ lookup: ItemLookup) {
        operation = .lookup
        query = [:]
        changes = [:]
        options = [:]
        secrets = []
        self.lookup = lookup
    }

    /// Encodes into guarded memory (the payload may hold secrets).
    /// - Throws: `KeychainStatus.allocate` when no guarded memory is left.
    public func encoded() throws -> SecureBytes {
        if operation == .lookup {
            guard let lookup else { preconditionFailure("a lookup request carries its ItemLookup") }
            return try lookup.encoded()
        }
        let record = options.fields  // by raw name, as the record has always been written
        let size = 3 + AttributeCoding.encodedSize(query) + AttributeCoding.encodedSize(changes)
            + AttributeCoding.encodedSize(record) + 1 + secrets.reduce(0) { $0 + 4 + $1.count }
        var w = ByteWriter(capacity: size)
        w.u16(WireProtocol.version)
        w.u8(operation.rawValue)
        AttributeCoding.write(query, into: &w)
        AttributeCoding.write(changes, into: &w)
        AttributeCoding.write(record, into: &w)
        w.u8(UInt8(secrets.count))
        for s in secrets { s.withUnsafeBytes { w.lengthPrefixed($0) } }
        defer { wipeBytes(&w.bytes) }
        // One memcpy, not an element-wise copy.
        return try mapAllocationFailure { try w.bytes.withUnsafeBytes { try SecureBytes(copying: $0) } }
    }

    /// Decodes a payload. - Throws: `badReq` for another protocol version, `decode` when malformed.
    public static func decode(_ payload: SecureBytes) throws -> Request {
        try payload.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            do {
                guard try r.u16() == WireProtocol.version else { throw KeychainStatus.badReq }
                guard let op = Operation(rawValue: try r.u8()) else { throw KeychainStatus.badReq }
                if op == .lookup {
                    // Its own payload: no records, no dictionary made.
                    let lookup = try ItemLookup.read(from: &r)
                    guard r.remaining == 0 else { throw KeychainStatus.decode }
                    return Request(lookup)
                }
                let query = try AttributeCoding.read(from: &r)
                let changes = try AttributeCoding.read(from: &r)
                let options = Options(fields: try AttributeCoding.readFields(from: &r))
                var secrets: [SecureBytes] = []
                for _ in 0..<Int(try r.u8()) { secrets.append(try readSecret(&r, buf)) }
                guard r.remaining == 0 else { throw KeychainStatus.decode }
                return Request(op, query: query, changes: changes, options: options, secrets: secrets)
            } catch is ByteReader.Truncated {
                throw KeychainStatus.decode
            }
        }
    }
}

/// A response: the status, the shaped result of a search or add, and operation-specific info.
public struct Response: Sendable {
    public var status: KeychainStatus
    public var result: QueryResult
    public var info: Fields

    public init(status: KeychainStatus = .success, result: QueryResult = .none, info: Fields = [:]) {
        self.status = status
        self.result = result
        self.info = info
    }

    /// Encodes into guarded memory (the reply may hold secrets).
    /// - Throws: `KeychainStatus.allocate` when no guarded memory is left.
    public func encoded() throws -> SecureBytes {
        // A lookup's reply, one secret and nothing else: written straight into guarded memory.
        if case .value(.data(let secret)) = result, info.isEmpty { return try Self.encoded(status: status, secret: secret) }
        var w = ByteWriter(capacity: encodedSize)
        w.u16(WireProtocol.version)
        w.u32(UInt32(bitPattern: status.rawValue))
        func put(_ v: ReturnedValue) {
            switch v {
            case .data(let d):
                w.u8(1); AttributeCoding.write(Attributes(), into: &w)
                w.u8(1); d.withUnsafeBytes { w.lengthPrefixed($0) }; w.u8(0)
            case .persistentRef(let ref):
                w.u8(2); AttributeCoding.write(Attributes(), into: &w)
                w.u8(0); w.u8(1); w.lengthPrefixed(ref)
            case .item(let item):
                w.u8(3); AttributeCoding.write(item.attributes, into: &w)
                if let s = item.secret { w.u8(1); s.withUnsafeBytes { w.lengthPrefixed($0) } } else { w.u8(0) }
                if let ref = item.persistentRef { w.u8(1); w.lengthPrefixed(ref) } else { w.u8(0) }
            }
        }
        // One value is written as it is, not gathered in an array first.
        switch result {
        case .none: w.u8(0); w.u32(0)
        case .value(let v): w.u8(1); w.u32(1); put(v)
        case .array(let a): w.u8(2); w.u32(UInt32(a.count)); a.forEach(put)
        }
        AttributeCoding.write(info, into: &w)
        defer { wipeBytes(&w.bytes) }
        // One memcpy, not an element-wise copy.
        return try mapAllocationFailure { try w.bytes.withUnsafeBytes { try SecureBytes(copying: $0) } }
    }

    /// The bytes `encoded()` writes for one data value and no info, made in place: no copy of
    /// the secret outside guarded memory.
    private static func encoded(status: KeychainStatus, secret: SecureBytes) throws -> SecureBytes {
        // version, status, shape, count; kind, empty record, has-secret, length; secret; has-ref, empty info
        let head = 2 + 4 + 1 + 4 + 1 + 2 + 1 + 4, tail = 1 + 2
        let length = secret.count
        let out = try mapAllocationFailure { try SecureBytes(count: head + length + tail) }
        out.withUnsafeMutableBytes { b in
            func put<T: FixedWidthInteger>(_ v: T, at offset: Int) { b.storeBytes(of: v.bigEndian, toByteOffset: offset, as: T.self) }
            put(WireProtocol.version, at: 0)
            put(UInt32(bitPattern: status.rawValue), at: 2)
            put(UInt8(1), at: 6)        // one value
            put(UInt32(1), at: 7)
            put(UInt8(1), at: 11)       // kind: data
            put(UInt16(0), at: 12)      // no attributes
            put(UInt8(1), at: 14)       // has a secret
            put(UInt32(length), at: 15)
            secret.withUnsafeBytes { s in
                if length > 0 { (b.baseAddress! + head).copyMemory(from: s.baseAddress!, byteCount: length) }
            }
            put(UInt8(0), at: head + length)       // no reference
            put(UInt16(0), at: head + length + 1)  // no info
        }
        return out
    }

    /// The exact size of `encoded()`.
    var encodedSize: Int {
        func size(_ v: ReturnedValue) -> Int {
            switch v {
            case .data(let d): return 1 + 2 + 1 + 4 + d.count + 1
            case .persistentRef(let r): return 1 + 2 + 1 + 1 + 4 + r.count
            case .item(let i):
                return 1 + AttributeCoding.encodedSize(i.attributes) + 1 + (i.secret.map { 4 + $0.count } ?? 0)
                    + 1 + (i.persistentRef.map { 4 + $0.count } ?? 0)
            }
        }
        let body: Int
        switch result {
        case .none: body = 0
        case .value(let v): body = size(v)
        case .array(let a): body = a.reduce(0) { $0 + size($1) }
        }
        return 2 + 4 + 1 + 4 + body + AttributeCoding.encodedSize(info)
    }

    public static func decode(_ payload: SecureBytes) throws -> Response {
        try payload.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            do {
                guard try r.u16() == WireProtocol.version else { throw KeychainStatus.badReq }
                let status = KeychainStatus(rawValue: Int32(bitPattern: try r.u32()))
                let shape = try r.u8()
                let count = Int(try r.u32())
                guard shape <= 2, count <= r.remaining else { throw KeychainStatus.decode }
                var values: [ReturnedValue] = []
                for _ in 0..<count {
                    let kind = try r.u8()
                    let attributes = try AttributeCoding.read(from: &r)
                    let secret = try r.u8() == 1 ? try readSecret(&r, buf) : nil
                    let ref = try r.u8() == 1 ? try r.lengthPrefixed() : nil
                    switch kind {
                    case 1: values.append(.data(try secret ?? mapAllocationFailure { try SecureBytes(count: 0) }))
                    case 2: values.append(.persistentRef(ref ?? []))
                    case 3: values.append(.item(FoundItem(attributes: attributes, secret: secret, persistentRef: ref)))
                    default: throw KeychainStatus.decode
                    }
                }
                let info = try AttributeCoding.readFields(from: &r)
                guard r.remaining == 0 else { throw KeychainStatus.decode }
                let result: QueryResult
                switch shape {
                case 0: result = .none
                case 1:
                    guard values.count == 1 else { throw KeychainStatus.decode }
                    result = .value(values[0])
                default: result = .array(values)
                }
                return Response(status: status, result: result, info: info)
            } catch is ByteReader.Truncated {
                throw KeychainStatus.decode
            }
        }
    }
}

/// Copies a length-prefixed secret straight from the guarded payload into guarded memory.
private func readSecret(_ r: inout ByteReader, _ buf: UnsafeRawBufferPointer) throws -> SecureBytes {
    let length = Int(try r.u32())
    let start = r.offset
    guard length <= r.remaining else { throw ByteReader.Truncated() }
    try r.skip(length)
    return try mapAllocationFailure { try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: buf[start..<start + length])) }
}
