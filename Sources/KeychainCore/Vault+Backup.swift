import KeychainCrypto

/// A finished export: the backup file's bytes (all sealed but the clear header) and counts.
public struct BackupExport: Sendable {
    public var bytes: [UInt8]
    /// Items written to the backup.
    public var itemCount: Int
    /// Items of an exportable class that failed to open (damaged) and were left out.
    public var damagedCount: Int
}

/// What an import did.
public struct ImportSummary: Equatable, Sendable {
    public var added = 0
    public var replaced = 0
    public var skipped = 0
    /// The access groups' definitions the backup carried (as the vault's owner stores them).
    public var groups: [Fields] = []
    /// The access groups of the items added or replaced.
    public var itemGroups: Set<String> = []
    public init(added: Int = 0, replaced: Int = 0, skipped: Int = 0) {
        self.added = added
        self.replaced = replaced
        self.skipped = skipped
    }
}

/// An export would include presence-gated items nobody approved; ask, then export again with
/// their references.
public struct BackupApprovalNeeded: Error, Sendable {
    public let items: [(ref: PersistentRef, attributes: Attributes)]
}

extension Vault {
    /// The protection classes a backup carries: the ones that may leave this machine.
    public static let exportableClasses: [ProtectionClass] = ProtectionClass.allCases.filter { !$0.isThisDeviceOnly }

    // MARK: Export

    /// Writes every item of the classes that may leave the machine (`ak`, `ck`, `dk`), of every
    /// access group, with all its attributes and its secret, sealed under `passphrase`
    /// (docs/backup-format.md). Never a ThisDeviceOnly item.
    /// - Parameters:
    ///   - kdf: Argon2id cost of the backup key, stored in the backup's header.
    ///   - synchronizableOnly: only items with `sync=1`.
    ///   - approved: presence-gated items someone approved for this export.
    ///   - groups: the vault's access-group definitions, each with its `name`; those of the
    ///     groups the exported items are in go into the backup after them.
    ///   - chunkSize: plaintext bytes per sealed chunk.
    /// - Throws: `param` for an empty passphrase or bad limits; `interactionNotAllowed` when a
    ///   class key is locked (the backup would be incomplete); `BackupApprovalNeeded` for
    ///   presence-gated items not in `approved`.
    public func exportBackup(passphrase: SecureBytes, kdf: KDFParameters = .moderate, synchronizableOnly: Bool = false,
                             approved: Set<PersistentRef> = [], groups: [Fields] = [],
                             chunkSize: Int = BackupFormat.defaultChunkSize) throws -> BackupExport {
        guard passphrase.count > 0, kdf.isValid, (1...BackupFormat.maximumChunkSize).contains(chunkSize) else {
            throw KeychainStatus.param
        }
        let salt = randomBytes(PasswordHash.saltLength)
        let key: SecureBytes
        do { key = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, parameters: kdf) }
        catch { throw KeychainStatus.allocate }
        defer { key.wipe() }
        let writer = try BackupWriter(header: BackupFormat.makeHeader(kdf: kdf, salt: salt, chunkSize: chunkSize, key: key),
                                  key: key, chunkSize: chunkSize)
        var count = 0, damaged = 0
        var usedGroups = Set<String>()
        var unapproved: [(ref: PersistentRef, attributes: Attributes)] = []
        try mutex.withLock {
            try store.rows(protections: Self.exportableClasses, synchronizableOnly: synchronizableOnly) { item in
                let classKey = try availableKey(for: item.protection)
                guard let m = try nilUnlessOutOfMemory({ try open(item, classKey: classKey, needSecret: true) }) else {
                    damaged += 1
                    return
                }
                defer { m.secret?.wipe() }
                let ref = PersistentRef(itemClass: item.itemClass, uuid: item.uuid)
                if let control = m.attributes[.accessControl].flatMap(AccessControl.init), control.requiresPresence,
                   !approved.contains(ref) {
                    unapproved.append((ref, m.attributes.filter { !$0.key.hasPrefix(.store) }))
                    return
                }
                if case .string(let group)? = m.attributes[.accessGroup] { usedGroups.insert(group) }
                let blob = try ItemCodec.encode(m.attributes)
                defer { blob.wipe() }
                let secret = try m.secret ?? SecureBytes(count: 0)
                var w = ByteWriter()
                w.u8(BackupFormat.itemRecord)
                w.u8(item.itemClass.code)
                w.u8(item.protection.code)
                w.u32(UInt32(blob.count))
                writer.write(w.bytes)
                writer.write(blob)
                var s = ByteWriter()
                s.u32(UInt32(secret.count))
                writer.write(s.bytes)
                writer.write(secret)
                count += 1
            }
        }
        guard unapproved.isEmpty else { throw BackupApprovalNeeded(items: unapproved) }
        for group in groups {
            guard case .string(let name)? = group["name"], usedGroups.contains(name) else { continue }
            var body = ByteWriter()
            AttributeCoding.write(group, into: &body)
            var w = ByteWriter()
            w.u8(BackupFormat.groupRecord)
            w.u32(UInt32(body.bytes.count))
            writer.write(w.bytes + body.bytes)
        }
        var end = ByteWriter()
        end.u8(BackupFormat.endRecord)
        end.u64(UInt64(count))
        writer.write(end.bytes)
        return BackupExport(bytes: writer.finish(), itemCount: count, damagedCount: damaged)
    }

    // MARK: Import

    /// Restores a backup in one transaction: every item or none. Items keep their attributes
    /// (dates included), access group and access control; each gets a new item key and
    /// identifier. An item whose primary key is taken is resolved by `policy`; under
    /// `keepNewer`, a vault item that can never be read here (damaged, or bound to another
    /// device key) counts as older.
    ///
    /// `storeGroups` sees the backup's access-group definitions inside the transaction, before
    /// it commits; a setting it returns (name, value) is stored as a sealed setting in the same
    /// transaction, so items and the groups they need arrive together or not at all.
    /// - Throws: `decode` for a damaged, truncated or reordered backup; `authFailed` for a
    ///   wrong passphrase; `BackupFileError.newerFormat`; `interactionNotAllowed` when a class
    ///   key the import needs is locked; whatever `storeGroups` throws (nothing is imported).
    public func importBackup(_ bytes: [UInt8], passphrase: SecureBytes, policy: ImportPolicy = .keepNewer,
                             storeGroups: ([Fields]) throws -> (setting: String, value: SecureBytes)? = { _ in nil })
        throws -> ImportSummary {
        let header = try BackupHeader.parse(bytes)
        let key = try header.key(passphrase: passphrase)   // slow: outside the mutex
        defer { key.wipe() }
        let reader = BackupReader(file: bytes, header: header, key: key)
        return try mutex.withLock {
            guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
            return try store.db.transaction {
                var summary = ImportSummary()
                var count: UInt64 = 0
                while true {
                    let kind = try reader.u8()
                    if kind == BackupFormat.endRecord {
                        guard try reader.u64() == count, reader.atEnd else { throw KeychainStatus.decode }
                        if let (name, value) = try storeGroups(summary.groups) {
                            defer { value.wipe() }
                            try storeSealedSettingLocked(name, value)
                        }
                        return summary
                    }
                    if kind == BackupFormat.groupRecord {
                        summary.groups.append(try Self.readGroupRecord(reader, version: header.version))
                        continue
                    }
                    // Group records come after every item.
                    guard kind == BackupFormat.itemRecord, summary.groups.isEmpty,
                          let itemClass = ItemClass(code: try reader.u8()),
                          let protection = ProtectionClass(code: try reader.u8()), !protection.isThisDeviceOnly
                    else { throw KeychainStatus.decode }
                    let blob = try reader.read(Int(try reader.u32()))
                    let attributes = try ItemCodec.decode(blob)
                    blob.wipe()
                    try Self.checkBackupRecord(attributes, itemClass: itemClass, protection: protection)
                    let length = Int(try reader.u32())
                    // A secret larger than any item may hold is refused like a damaged backup.
                    guard length <= ItemLimits.maximumSecretLength else { throw KeychainStatus.decode }
                    let secret = try reader.read(length)
                    defer { secret.wipe() }
                    let changed = summary.added + summary.replaced
                    try restore(itemClass: itemClass, protection: protection, attributes: attributes, secret: secret,
                                policy: policy, indexKey: indexKey, summary: &summary)
                    if summary.added + summary.replaced > changed, case .string(let group)? = attributes[.accessGroup] {
                        summary.itemGroups.insert(group)
                    }
                    count += 1
                }
            }
        }
    }

    /// One access group's definition; only in version 2 backups, at most 64 KiB, with a name.
    private static func readGroupRecord(_ reader: BackupReader, version: UInt16) throws -> Fields {
        guard version >= 2 else { throw KeychainStatus.decode }
        let length = Int(try reader.u32())
        guard length <= 1 << 16 else { throw KeychainStatus.decode }
        let body = try reader.read(length)
        defer { body.wipe() }
        let group = try body.withUnsafeBytes { buf -> Fields in
            var r = ByteReader(buf)
            do {
                let a = try AttributeCoding.readFields(from: &r)
                guard r.remaining == 0 else { throw KeychainStatus.decode }
                return a
            } catch is ByteReader.Truncated {
                throw KeychainStatus.decode
            }
        }
        guard case .string(let name)? = group["name"], !name.isEmpty else { throw KeychainStatus.decode }
        return group
    }

    /// Adds, replaces or skips one item from a backup; mutex held, inside the transaction.
    private func restore(itemClass: ItemClass, protection: ProtectionClass, attributes: Attributes, secret: SecureBytes,
                         policy: ImportPolicy, indexKey: SecureBytes, summary: inout ImportSummary) throws {
        let classKey = try availableKey(for: protection)
        let tokens = lookupTokens(attributes, itemClass: itemClass, indexKey: indexKey)
        guard let existing = try store.row(primaryKeyToken: IndexToken.primaryKey(attributes, itemClass: itemClass,
                                                                                 key: indexKey)) else {
            let item = try seal(uuid: randomBytes(16), rowID: 0, itemClass: itemClass, protection: protection,
                            attributes: attributes, secret: secret, classKey: classKey, indexKey: indexKey, version: 1)
            _ = try store.insert(item, tokens: tokens)
            summary.added += 1
            return
        }
        if policy == .keepNewer, try Self.modified(attributes) <= modifiedDateForImport(existing) {
            summary.skipped += 1
            return
        }
        // The row, its identifier and its place in insertion order stay; the contents are the backup's.
        let item = try seal(uuid: existing.uuid, rowID: existing.rowID, itemClass: itemClass, protection: protection,
                        attributes: attributes, secret: secret, classKey: classKey, indexKey: indexKey,
                        version: existing.version + 1)
        try store.replace(item, tokens: tokens)
        summary.replaced += 1
    }

    /// The vault item's `mdat`; minus infinity when it can never be read here.
    /// - Throws: `interactionNotAllowed` when its class key is only locked: unlock and retry.
    private func modifiedDateForImport(_ item: StoredItem) throws -> Double {
        let key: SecureBytes
        do { key = try availableKey(for: item.protection) } catch KeychainStatus.decode { return -.infinity }
        guard let m = try? open(item, classKey: key, needSecret: false) else { return -.infinity }
        return Self.modified(m.attributes)
    }

    private static func modified(_ attributes: Attributes) -> Double {
        if case .date(let t)? = attributes[.modificationDate], !t.isNaN { return t }
        return -.infinity
    }

    /// A record must look like what the vault itself stores for that class.
    private static func checkBackupRecord(_ a: Attributes, itemClass: ItemClass, protection: ProtectionClass) throws {
        let known = itemClass.knownAttributes
        guard a.keys.allSatisfy({ known.contains($0) || $0 == secretModified }),
              a[.accessible] == .string(protection.rawValue),
              case .string(let group)? = a[.accessGroup], !group.isEmpty,
              a[.synchronizable] == .number(0) || a[.synchronizable] == .number(1)
        else { throw KeychainStatus.decode }
        if let c = a[.accessControl] {
            guard let control = AccessControl(c), control.protection == protection else { throw KeychainStatus.decode }
        }
    }

    // MARK: Items bound to another machine

    /// Deletes every ThisDeviceOnly item (`aku`, `cku`, `dku`, `akpu`) when this vault was made
    /// with another device key, so those items can never be read here. Reads only the clear
    /// `pdmn` column; decrypts nothing. On the original machine it deletes nothing.
    /// - Returns: how many items were deleted.
    public func purgeOtherDeviceItems() throws -> Int {
        try mutex.withLock {
            guard header.deviceKeyID != device.identifier else { return 0 }
            return try store.db.transaction {
                try ProtectionClass.allCases.filter(\.isThisDeviceOnly).reduce(0) { $0 + (try store.deleteAll(protection: $1)) }
            }
        }
    }
}
