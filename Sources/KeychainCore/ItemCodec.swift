import KeychainCrypto

/// Encodes and encrypts an item's parts. Each part is sealed under the item's own key with
/// associated data naming the vault, the item, its class, its protection class and the part,
/// so a blob moved to another item, row, class or part fails to open.
enum ItemCodec {
    enum Part: UInt8 { case itemKey = 1, attributes = 2, secret = 3 }

    static func associatedData(vaultID: [UInt8], uuid: [UInt8], itemClass: ItemClass,
                               protection: ProtectionClass, part: Part) -> [UInt8] {
        // One allocation: every open of a file builds this.
        var w = ByteWriter(capacity: associatedDataLabel.count + vaultID.count + uuid.count + 3)
        w.raw(associatedDataLabel)
        w.raw(vaultID)
        w.raw(uuid)
        w.u8(itemClass.code)
        w.u8(protection.code)
        w.u8(part.rawValue)
        return w.bytes
    }

    static let associatedDataLabel = Array("keychainfs item v1".utf8)

    /// Serialises attributes in key order into guarded memory.
    static func encode(_ attributes: Attributes) throws -> SecureBytes {
        var w = ByteWriter(capacity: AttributeCoding.encodedSize(attributes))
        AttributeCoding.write(attributes, into: &w)
        defer { wipeBytes(&w.bytes) }
        return try SecureBytes(copying: w.bytes)
    }

    /// Parses what `encode` wrote. - Throws: `KeychainStatus.decode` on malformed input.
    static func decode(_ blob: SecureBytes) throws -> Attributes {
        try blob.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            let out = try AttributeCoding.read(from: &r)
            guard r.remaining == 0 else { throw KeychainStatus.decode }
            return out
        }
    }
}

/// Keyed blind index tokens: equal values give equal tokens, and without the index key a token
/// says nothing about its value. Lookups by primary key never decrypt an item.
enum IndexToken {
    /// Canonical bytes of a value for tokens: numbers and booleans as integers, strings and
    /// data by their bytes (so a String and its UTF-8 Data find each other).
    static func canonical(_ value: AttributeValue) -> [UInt8] {
        var w = ByteWriter()
        if let n = value.integerView {
            w.u8(UInt8(ascii: "n")); w.u64(UInt64(bitPattern: n))
        } else if let b = value.byteView {
            w.u8(UInt8(ascii: "b")); w.raw(b)
        } else if case .date(let t) = value {
            w.u8(UInt8(ascii: "t")); w.u64(t.bitPattern)
        }
        return w.bytes
    }

    /// A 16-byte token for one attribute of one class.
    static func attribute(_ name: AttributeKey, _ value: AttributeValue, itemClass: ItemClass, key: SecureBytes) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("attr".utf8))
        w.u8(itemClass.code)
        w.lengthPrefixed(Array(name.rawValue.utf8))
        w.raw(canonical(value))
        defer { wipeBytes(&w.bytes) }
        return KeyedHash.hash(w.bytes, key: key, length: 16)
    }

    /// A 16-byte token for an access group, shared by all classes.
    static func group(_ name: String, key: SecureBytes) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array(AttributeKey.accessGroup.rawValue.utf8))
        w.raw(Array(name.utf8))
        defer { wipeBytes(&w.bytes) }
        return KeyedHash.hash(w.bytes, key: key, length: 16)
    }

    /// The 32-byte primary-key token: class, every primary-key attribute (missing ones as
    /// empty), access group and synchronizable. Unique in the store.
    static func primaryKey(_ attributes: Attributes, itemClass: ItemClass, key: SecureBytes) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("pkey".utf8))
        w.u8(itemClass.code)
        for name in itemClass.primaryKey + [.accessGroup, .synchronizable] {
            let value = attributes[name] ?? AttributeKind.of(name).empty
            w.lengthPrefixed(Array(name.rawValue.utf8))
            w.lengthPrefixed(canonical(value))
        }
        defer { wipeBytes(&w.bytes) }
        return KeyedHash.hash(w.bytes, key: key, length: 32)
    }
}
