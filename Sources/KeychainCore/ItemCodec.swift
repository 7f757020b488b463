import KeychainCrypto

/// Encodes and encrypts an item's parts. Each part is sealed under the item's own key with
/// associated data naming the vault, the item, its class, its protection class and the part,
/// so a blob moved to another item, row, class or part fails to open.
enum ItemCodec {
    enum Part: UInt8 { case itemKey = 1, attributes = 2, secret = 3 }

    static func associatedData(vaultID: [UInt8], uuid: [UInt8], itemClass: ItemClass,
                               protection: ProtectionClass, part: Part) -> [UInt8] {
        withAssociatedData(vaultID: vaultID, uuid: uuid, itemClass: itemClass, protection: protection, part: part) { [UInt8]($0) }
    }

    /// The associated data of one part, built on the stack for `body`, which may change its last
    /// byte (the part) to open the item's other parts with the same bytes.
    static func withAssociatedData<R>(vaultID: [UInt8], uuid: [UInt8], itemClass: ItemClass,
                                      protection: ProtectionClass, part: Part,
                                      _ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        let count = associatedDataLabel.count + vaultID.count + uuid.count + 3
        return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { ad in
            // Offsets computed, not kept in a variable the copies capture (whose every change
            // would be checked for exclusive access at run time).
            let label = associatedDataLabel.count, vault = label + vaultID.count, at = vault + uuid.count
            associatedDataLabel.withUnsafeBytes { ad.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: label) }
            vaultID.withUnsafeBytes { if let b = $0.baseAddress { (ad.baseAddress! + label).copyMemory(from: b, byteCount: $0.count) } }
            uuid.withUnsafeBytes { if let b = $0.baseAddress { (ad.baseAddress! + vault).copyMemory(from: b, byteCount: $0.count) } }
            ad[at] = itemClass.code
            ad[at + 1] = protection.code
            ad[at + 2] = part.rawValue
            return try body(ad)
        }
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
        try blob.withUnsafeBytes { try decode($0) }
    }

    /// The same from plaintext where it is (a reader's guarded scratch buffer); with a
    /// selection, only the attributes it names.
    static func decode(_ plain: UnsafeRawBufferPointer, keeping selection: AttributeSelection? = nil) throws -> Attributes {
        var r = ByteReader(plain)
        let out = try selection.map { try AttributeCoding.read(from: &r, keeping: $0) } ?? AttributeCoding.read(from: &r)
        guard r.remaining == 0 else { throw KeychainStatus.decode }
        return out
    }

    /// The values of the attributes `selection` names, by their position in it, from plaintext
    /// where it is; the blob is checked as `decode` checks it.
    static func decode(_ plain: UnsafeRawBufferPointer, selecting selection: AttributeSelection) throws -> [AttributeValue?] {
        var r = ByteReader(plain)
        let out = try AttributeCoding.read(from: &r, selecting: selection)
        guard r.remaining == 0 else { throw KeychainStatus.decode }
        return out
    }
}

/// Keyed blind index tokens: equal values give equal tokens, and without the index key a token
/// says nothing about its value. Lookups by primary key never decrypt an item. Each is hashed as
/// its layout in docs/vault-format.md is fed to BLAKE2b, piece by piece, never built whole.
enum IndexToken {
    /// Feeds the canonical bytes of a value (docs/vault-format.md): numbers and booleans as
    /// integers, strings and data by their bytes (so a String and its UTF-8 Data find each
    /// other), dates by their bit pattern; after their u32 length when `lengthPrefixed`.
    private static func feedCanonical(_ value: AttributeValue, to h: KeyedHash.Input, lengthPrefixed: Bool) {
        switch value {
        case .number, .bool:
            if lengthPrefixed { h.appendBigEndian(UInt32(9)) }
            h.append(UInt8(ascii: "n"))
            h.appendBigEndian(UInt64(bitPattern: value.integerView!))
        case .string(let s):
            if lengthPrefixed { h.appendBigEndian(UInt32(1 + s.utf8.count)) }
            h.append(UInt8(ascii: "b"))
            h.append(s)
        case .data(let d):
            if lengthPrefixed { h.appendBigEndian(UInt32(1 + d.count)) }
            h.append(UInt8(ascii: "b"))
            h.append(d)
        case .date(let t):
            if lengthPrefixed { h.appendBigEndian(UInt32(9)) }
            h.append(UInt8(ascii: "t"))
            h.appendBigEndian(t.bitPattern)
        }
    }

    /// A u32 length and the UTF-8 bytes of `name`.
    static func feedLengthPrefixed(_ name: String, to h: KeyedHash.Input) {
        h.appendBigEndian(UInt32(name.utf8.count))
        h.append(name)
    }

    /// A 16-byte token for one attribute of one class.
    static func attribute(_ name: AttributeKey, _ value: AttributeValue, itemClass: ItemClass, key: SecureBytes) -> [UInt8] {
        KeyedHash.hash(key: key, length: 16) { h in
            h.append("attr")
            h.append(itemClass.code)
            feedLengthPrefixed(name.rawValue, to: h)
            feedCanonical(value, to: h, lengthPrefixed: false)
        }
    }

    /// A 16-byte token for an access group, shared by all classes.
    static func group(_ name: String, key: SecureBytes) -> [UInt8] {
        KeyedHash.hash(key: key, length: 16) { h in
            h.append(AttributeKey.accessGroup.rawValue)
            h.append(name)
        }
    }

    /// The 32-byte primary-key token: class, every primary-key attribute (missing ones as
    /// empty), access group and synchronizable. Unique in the store.
    static func primaryKey(_ attributes: Attributes, itemClass: ItemClass, key: SecureBytes) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            primaryKey(itemClass: itemClass, key: key, into: UnsafeMutableRawBufferPointer(out),
                       group: attributes[.accessGroup], synchronizable: attributes[.synchronizable]) { attributes[$0] }
            count = 32
        }
    }

    /// The primary-key token of the class's primary-key attributes as `attribute` gives them,
    /// then `group` and `synchronizable` (nil counts as the empty value), into `out` (32 bytes):
    /// the one function behind the stored token and a search's, so the two agree.
    static func primaryKey(itemClass: ItemClass, key: SecureBytes, into out: UnsafeMutableRawBufferPointer,
                           group: AttributeValue?, synchronizable: AttributeValue?,
                           attribute: (AttributeKey) -> AttributeValue?) {
        // Each name's u32 length and bytes, the same for every token of the class, made once.
        let names = lengthPrefixedNames[Int(itemClass.code) - 1]
        KeyedHash.hash(key: key, into: out) { h in
            h.append("pkey")
            h.append(itemClass.code)
            for (i, name) in itemClass.primaryKey.enumerated() {
                h.append(names[i])
                feedCanonical(attribute(name) ?? AttributeKind.of(name).empty, to: h, lengthPrefixed: true)
            }
            h.append(names[names.count - 2])
            feedCanonical(group ?? AttributeKind.of(.accessGroup).empty, to: h, lengthPrefixed: true)
            h.append(names[names.count - 1])
            feedCanonical(synchronizable ?? AttributeKind.of(.synchronizable).empty, to: h, lengthPrefixed: true)
        }
    }

    /// By class code - 1: `u32 len(name) || name` of each primary-key name, then `agrp`, `sync`.
    private static let lengthPrefixedNames: [[[UInt8]]] = ItemClass.allCases.sorted { $0.code < $1.code }.map { c in
        (c.primaryKey + [.accessGroup, .synchronizable]).map { name in
            var w = ByteWriter()
            w.lengthPrefixed(Array(name.rawValue.utf8))
            return w.bytes
        }
    }
}
