import KeychainCrypto
import KeychainSystem
import SQLiteStore
import Synchronization

/// An open vault: one SQLite file, its header and the keys currently unlocked. All item
/// operations take the caller's ordered list of entitled access groups; the first is the
/// default group for adds. Every method is safe to call from any thread.
///
/// Writes run one at a time on the write connection (`store`) under `mutex`. Searches and the
/// mount's reads run beside them and beside each other on read-only connections
/// (`withReader`), holding only the read side of `keys.gate` (see `KeyRing` for the rule that
/// lets `lock()` wipe keys safely). What a search reads of the vault is therefore either fixed
/// at open (`vaultID`, `madeHere`), under the gate (`keys`), or locked on its own
/// (`openedItemKeys`, `attributeOpens`); `header` is for writers only.
public final class Vault: @unchecked Sendable {
    public let path: String
    let store: ItemStore
    let device: DeviceKey
    var header: VaultHeader
    let keys: KeyRing
    let mutex = PThreadMutex()
    /// The header's vault identifier, which never changes: every item's associated data names it.
    let vaultID: [UInt8]
    /// True when the vault was made with this machine's device key (the header's key id never changes).
    let madeHere: Bool
    /// Read-only connections for searches (`withReader`).
    let readers: ReaderPool
    /// What a search runs on when it runs on the write connection, with the mutex held.
    let writeContext: SearchContext
    /// Item keys unwrapped by recent opens (searches, file reads), by their sealed form and the
    /// associated data that bound it (so a changed or moved item misses): an item looked up or
    /// read again skips one decryption. At most `itemKeyLimit`, emptied when full.
    /// The class keys that unwrap them are in memory anyway while unlocked; these are guarded
    /// memory too, and all are wiped at every lock, inside the gate's write side (no search
    /// holds one then).
    let openedItemKeys = Locked<[SealedKey: SecureBytes]>([:])
    /// A sealed item key and the associated data that bound it, copied into the value itself
    /// (a box is 72 bytes and its data 53: `capacity` holds both), so that a lookup, made at
    /// every open, allocates nothing. Equal only when both are byte for byte the same.
    struct SealedKey: Hashable {
        static let capacity = 128
        private var bytes: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
            = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        private let boxCount: UInt8
        private let dataCount: UInt8

        /// Nil when the two do not fit together (no item of this format): such a key is not kept.
        init?(box: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer) {
            guard box.count + associatedData.count <= Self.capacity else { return nil }
            boxCount = UInt8(box.count)
            dataCount = UInt8(associatedData.count)
            withUnsafeMutableBytes(of: &bytes) { b in
                if let base = box.baseAddress { b.baseAddress!.copyMemory(from: base, byteCount: box.count) }
                if let base = associatedData.baseAddress {
                    (b.baseAddress! + box.count).copyMemory(from: base, byteCount: associatedData.count)
                }
            }
        }

        static func == (a: SealedKey, b: SealedKey) -> Bool {
            guard a.boxCount == b.boxCount, a.dataCount == b.dataCount else { return false }
            return withUnsafeBytes(of: a.bytes) { x in withUnsafeBytes(of: b.bytes) { y in sameBytes(x, y) } }
        }

        /// The box's first 24 bytes, its random nonce, tell keys apart.
        func hash(into hasher: inout Hasher) {
            hasher.combine(bytes.0)
            hasher.combine(bytes.1)
            hasher.combine(bytes.2)
        }
    }
    static let itemKeyLimit = 1024
    /// Attribute blobs `open` decrypted (`attributeOpenCount`).
    let attributeOpens = Atomic<Int>(0)
    /// Locks since open (`lock`): a private key opened before one is opened again after it
    /// (`checkOpened`).
    let locks = Atomic<UInt64>(0)

    private init(path: String, store: ItemStore, header: VaultHeader, device: DeviceKey) throws {
        self.path = path
        self.store = store
        self.header = header
        self.device = device
        keys = KeyRing(hasPassphrase: header.hasPassphrase)
        vaultID = header.vaultID
        madeHere = header.deviceKeyID == device.identifier
        readers = ReaderPool(path: path, schema: store.schema)
        writeContext = try SearchContext(store: store)
        store.db.afterEachCommit { [readers] in readers.commitSeen() }
    }

    /// Whether searches keep their reader's read transaction open from one search to the next
    /// until this vault's write connection commits (`ReaderPool.keepsSnapshots`): no lock is
    /// taken or released per search. Only for a process that alone writes the vault file, as
    /// the daemon does once it holds the vault's claim; off by default.
    public var keepsReadSnapshots: Bool {
        get { readers.keepsSnapshots.load(ordering: .relaxed) }
        set { readers.keepsSnapshots.store(newValue, ordering: .relaxed) }
    }

    deinit {
        readers.closeAll()  // before the write connection, which then removes the WAL as the last one
        keys.wipeAll()
    }

    /// Frees what the idle connections cache (`PRAGMA shrink_memory`), after a listing of a
    /// large directory filled their caches with pages no lookup needs again soon.
    public func releaseCaches() {
        readers.shrinkIdle()
        mutex.withLock { try? store.db.execute("PRAGMA shrink_memory") }
    }

    /// Runs a search on a reader: a read-only connection of its own, with the keys' read side
    /// held and not the mutex, so searches run beside writes and beside each other. When every
    /// reader is busy (or none can be opened) it runs on the write connection under the mutex.
    /// `body` must not call back into the vault.
    func withReader<R>(_ body: (SearchContext) throws -> R) rethrows -> R {
        guard let reader = readers.take() else { return try mutex.withLock { try body(writeContext) } }
        defer { readers.give(reader) }
        return try keys.gate.withReadLock { try body(reader) }
    }

    // MARK: Creating and opening

    /// Creates a vault file (mode 0600) and returns it unlocked.
    /// - Parameters:
    ///   - passphrase: nil or empty for a vault without a passphrase.
    ///   - kdf: Argon2id cost, stored in the header.
    /// - Throws: `VaultFileError.exists`, `.io`; `KeychainStatus.param` for invalid KDF limits.
    public static func create(at path: String, passphrase: SecureBytes?, kdf: KDFParameters = .moderate,
                              deviceKey: DeviceKey) throws -> Vault {
        guard kdf.isValid else { throw KeychainStatus.param }
        do {
            let fd = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate], permissions: .ownerReadWrite)
            try? fd.close()
        } catch { throw Errno(error) == .fileExists ? VaultFileError.exists : VaultFileError.io }
        do {
            let db = try Connection(path: path, create: false)
            let store = ItemStore(db: db)
            try store.configure()
            let pass = try passphrase ?? SecureBytes(count: 0)
            var header = VaultHeader(hasPassphrase: pass.count > 0, kdf: kdf, salt: randomBytes(PasswordHash.saltLength),
                                     vaultID: randomBytes(16), deviceKeyID: deviceKey.identifier, keys: [])
            let passKey = try PasswordHash.deriveKey(passphrase: pass, salt: header.salt, parameters: kdf)
            for slot in KeyPlan.allSlots {
                header.keys += try KeyRing.wrap(.random(count: 32), slot: slot, header: header,
                                            passphraseKey: passKey, device: deviceKey)
            }
            try db.transaction {
                try store.createSchema()
                try store.writeMeta("header", header.encoded())
            }
            let vault = try Vault(path: path, store: store, header: header, device: deviceKey)
            try vault.keys.loadDeviceWrapped(header: header, device: deviceKey)
            try vault.keys.unlock(header: header, passphraseKey: passKey, device: deviceKey)
            return vault
        } catch {
            for name in [path, path + "-wal", path + "-shm"] { try? FileSystem.remove(name) }
            if error is SQLiteError { throw VaultFileError.io }
            if error is CryptoError { throw KeychainStatus.allocate }
            throw error
        }
    }

    /// Checks that `path` is a keychainfs vault (an SQLite file with a vault header of any
    /// format version) without changing it, and without the device key.
    /// - Throws: `VaultFileError.missing`, `.notAVault`, `.corruptHeader` or `.io`.
    public static func checkIsVault(at path: String) throws {
        guard FileSystem.exists(path) else { throw VaultFileError.missing }
        guard FileSystem.isAccessible(path, for: .read) else { throw VaultFileError.io }
        try checkNotTruncated(path)
        do {
            let db = try Connection(path: path, create: false)
            guard let bytes = try ItemStore(db: db).readMeta("header") else { throw VaultFileError.corruptHeader }
            do { _ = try VaultHeader.parse(bytes) } catch VaultHeader.ParseError.newerFormat(_) { return }
        } catch is VaultHeader.ParseError {
            throw VaultFileError.corruptHeader
        } catch let e as SQLiteError {
            throw e.isNotADatabase ? VaultFileError.notAVault : VaultFileError.corruptHeader
        }
    }

    /// Opens an existing vault, locked. Always-class items are readable at once.
    /// Never writes to a file that is not a vault of a supported format.
    /// - Throws: `VaultFileError` for a missing, foreign, damaged or newer file.
    public static func open(at path: String, deviceKey: DeviceKey) throws -> Vault {
        guard FileSystem.exists(path) else { throw VaultFileError.missing }
        guard FileSystem.isAccessible(path, for: [.read, .write]) else { throw VaultFileError.io }
        try checkNotTruncated(path)
        let db: Connection
        let header: VaultHeader
        do {
            db = try Connection(path: path, create: false)
            let probe = ItemStore(db: db)
            guard let bytes = try probe.readMeta("header") else { throw VaultFileError.corruptHeader }
            header = try VaultHeader.parse(bytes)
        } catch let e as VaultHeader.ParseError {
            switch e {
            case .newerFormat(let v): throw VaultFileError.newerFormat(found: Int(v), supported: Int(VaultHeader.currentFormat))
            case .notAVault, .malformed: throw VaultFileError.corruptHeader
            }
        } catch let e as SQLiteError {
            // Any other SQLite error here ("no such table") is an SQLite file that is not a vault.
            throw e.isNotADatabase ? VaultFileError.notAVault : VaultFileError.corruptHeader
        }
        let store = ItemStore(db: db)
        do {
            try store.migrate()
            try store.configure()
        } catch let e as SQLiteError {
            throw e.isNotADatabase ? VaultFileError.notAVault : VaultFileError.io
        }
        let vault: Vault
        do { vault = try Vault(path: path, store: store, header: header, device: deviceKey) }
        catch { throw KeychainStatus.allocate }
        do { try vault.keys.loadDeviceWrapped(header: header, device: deviceKey) }
        catch { throw VaultFileError.corruptHeader }
        return vault
    }

    // MARK: Lock state

    public var lockState: LockState { keys.gate.withReadLock { keys.state } }
    public var hasPassphrase: Bool { mutex.withLock { header.hasPassphrase } }
    public var kdfParameters: KDFParameters { mutex.withLock { header.kdf } }
    public var formatVersion: Int { mutex.withLock { Int(header.format) } }

    /// True when this machine's device key is the one the vault was made with.
    public var isOnOriginalDevice: Bool { mutex.withLock { header.deviceKeyID == device.identifier } }

    /// Unlocks with the passphrase (empty for a vault without one). Reads nothing but the
    /// header and writes nothing.
    /// - Throws: `authFailed` for a wrong passphrase; the lock state is then unchanged.
    public func unlock(passphrase: SecureBytes) throws {
        let (salt, kdf) = mutex.withLock { (header.salt, header.kdf) }
        // The slow derivation runs outside the lock so other callers are not held up.
        let key: SecureBytes
        do { key = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, parameters: kdf) }
        catch { throw KeychainStatus.allocate }
        try mutex.withLock {
            guard header.salt == salt else { throw KeychainStatus.authFailed }
            try keys.unlock(header: header, passphraseKey: key, device: device)
        }
    }

    /// True when `passphrase` is the vault's (for devicePasscode checks); changes nothing.
    public func verifyPassphrase(_ passphrase: SecureBytes) -> Bool {
        let h = mutex.withLock { header }
        guard let key = try? PasswordHash.deriveKey(passphrase: passphrase, salt: h.salt, parameters: h.kdf),
              let entry = h.entry(slot: ProtectionClass.whenUnlocked.code, wrapper: .passphrase) else { return false }
        defer { key.wipe() }
        guard let opened = try? AEAD.open(entry.box, key: key,
                                          associatedData: h.associatedData(slot: entry.slot, wrapper: .passphrase))
        else { return false }
        opened.wipe()
        return true
    }

    /// Wipes the keys of the WhenUnlocked classes (`ak`, `aku`, `akpu`).
    /// Waits for the searches in flight, then every later search finds these classes locked.
    public func lock() {
        mutex.withLock {
            keys.lock {
                locks.add(1, ordering: .releasing)
                openedItemKeys.withLock { $0.removeAll() }  // each wipes itself as it goes
            }
        }
    }

    /// Changes, adds or removes the passphrase. Re-wraps the class keys only, so the cost does
    /// not depend on the item count. Removing the passphrase deletes every
    /// WhenPasscodeSetThisDeviceOnly item, as Apple does when a passcode is turned off.
    /// - Parameters:
    ///   - old: the current passphrase (empty for none).
    ///   - new: nil or empty to remove the passphrase.
    ///   - kdf: new Argon2id cost; nil keeps the current one.
    /// - Returns: how many `akpu` items were deleted.
    /// - Throws: `authFailed` when `old` is wrong; nothing is changed then.
    @discardableResult
    public func changePassphrase(from old: SecureBytes, to new: SecureBytes?, kdf: KDFParameters? = nil) throws -> Int {
        let current = mutex.withLock { header }
        let newPass = try new ?? SecureBytes(count: 0)
        var next = current
        next.salt = randomBytes(PasswordHash.saltLength)
        next.hasPassphrase = newPass.count > 0
        if let kdf { guard kdf.isValid else { throw KeychainStatus.param }; next.kdf = kdf }
        let oldKey: SecureBytes, newKey: SecureBytes
        do {
            oldKey = try PasswordHash.deriveKey(passphrase: old, salt: current.salt, parameters: current.kdf)
            newKey = try PasswordHash.deriveKey(passphrase: newPass, salt: next.salt, parameters: next.kdf)
        } catch { throw KeychainStatus.allocate }
        return try mutex.withLock {
            guard header == current else { throw KeychainStatus.badReq }  // changed meanwhile
            next.keys = try KeyRing.rewrap(current, oldKey: oldKey, into: next, newKey: newKey)
            let removing = current.hasPassphrase && !next.hasPassphrase
            // The fresh akpu key would be bound to this machine's device key, not the vault's.
            if removing && header.deviceKeyID != device.identifier { throw KeychainStatus.decode }
            var freshPasscodeKey: SecureBytes?
            if removing {
                // The akpu class key goes with its items; a fresh one serves future adds.
                let slot = ProtectionClass.whenPasscodeSetThisDeviceOnly.code
                let fresh = try SecureBytes.random(count: 32)
                next.keys.removeAll { $0.slot == slot }
                next.keys += KeyRing.wrap(fresh, slot: slot, header: next, passphraseKey: newKey, device: device)
                freshPasscodeKey = fresh
            }
            var deleted = 0
            try store.db.transaction {
                if removing { deleted = try store.deleteAll(protection: .whenPasscodeSetThisDeviceOnly) }
                try store.writeMeta("header", next.encoded())
            }
            header = next
            keys.passphraseChanged(hasPassphrase: next.hasPassphrase, replacing: freshPasscodeKey,
                                   for: .whenPasscodeSetThisDeviceOnly)
            return deleted
        }
    }

    /// Counts and state for `show-keychain-info` and `status`; decrypts nothing.
    /// - Parameter accessGroups: count only the items of these groups (what a caller who is not
    ///   an administrator may see); nil for every item. Their tokens need the index key, which
    ///   the first unlock opens: before it the counts are left out (`countsKnown` false).
    public func info(accessGroups: [String]? = nil) throws -> VaultInfo {
        try mutex.withLock {
            var known = true
            var tokens: [[UInt8]]? = nil
            if let accessGroups {
                if let indexKey = keys.indexKey {
                    tokens = accessGroups.map { IndexToken.group($0, key: indexKey) }
                } else {
                    known = false
                    tokens = []
                }
            }
            let counts = try store.countsByProtection(groupTokens: tokens)
            let foreign = header.deviceKeyID == device.identifier
                ? 0 : counts.filter { $0.key.isThisDeviceOnly }.map(\.value).reduce(0, +)
            return VaultInfo(lockState: keys.state, hasPassphrase: header.hasPassphrase, kdf: header.kdf,
                             formatVersion: Int(header.format), itemsByProtection: counts,
                             itemsBoundToOtherDevice: foreign, countsKnown: known)
        }
    }
}

/// What `Vault.info()` reports.
public struct VaultInfo: Sendable {
    public var lockState: LockState
    public var hasPassphrase: Bool
    public var kdf: KDFParameters
    public var formatVersion: Int
    public var itemsByProtection: [ProtectionClass: Int]
    /// ThisDeviceOnly items made on another machine: never readable here.
    public var itemsBoundToOtherDevice: Int
    /// False when the counts could not be taken (a caller's groups before the first unlock).
    public var countsKnown = true
    public var itemCount: Int { itemsByProtection.values.reduce(0, +) }
}
