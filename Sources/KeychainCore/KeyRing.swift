import KeychainSystem
import KeychainCrypto

/// The vault's lock state (PRODUCT 5).
public enum LockState: String, Sendable {
    /// Opened but not yet unlocked: only Always-class items are readable.
    case neverUnlocked = "never-unlocked"
    case unlocked
    /// Locked after a first unlock: AfterFirstUnlock and Always classes stay readable.
    case locked
}

/// Which wrappers hold each key. The index key and the Always class key are wrapped twice, so
/// they are available before the first unlock here and after an unlock on another machine.
enum KeyPlan {
    static func wrappers(forSlot slot: UInt8) -> [VaultHeader.Wrapper] {
        if slot == VaultHeader.indexKeySlot { return [.passphrase, .device] }
        switch ProtectionClass(code: slot)! {
        case .whenUnlocked, .afterFirstUnlock: return [.passphrase]
        case .always: return [.passphrase, .device]
        case .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .whenPasscodeSetThisDeviceOnly:
            return [.deviceThenPassphrase]
        case .alwaysThisDeviceOnly: return [.device]
        }
    }

    static var allSlots: [UInt8] { ProtectionClass.allCases.map(\.code) + [VaultHeader.indexKeySlot] }
}

/// The keys a vault holds in memory, all in guarded memory, and the lock state.
///
/// Searches read it concurrently, without the vault's mutex. The rule:
/// - it changes (unlock, lock, a replaced key, the wipe at close) only inside `gate`'s write
///   side, which every method that changes it takes, and only with the vault's mutex held, so
///   writes (which hold the mutex) see it stable;
/// - a reader holds `gate`'s read side (`Vault.withReader`) from its first look at a key until
///   it no longer touches any key, item key or plaintext opened with one;
/// - so `lock()` waits for the searches in flight, wipes, and returns; a search that starts
///   after it finds no key and fails with errSecInteractionNotAllowed. No reader ever holds a
///   key that is being wiped, and no wiped key is read (a use after `wipe()` traps anyway).
/// The write side is taken after the mutex, never the other way round, and a reader never
/// takes the mutex while it holds the read side.
///
/// That rule, not Swift's run-time exclusivity check, keeps readers and the writer apart, so the
/// check (a thread-local lookup on every read of every property, several per search) is left out.
final class KeyRing: @unchecked Sendable {
    @exclusivity(unchecked) private(set) var classKeys: [ProtectionClass: SecureBytes] = [:]
    @exclusivity(unchecked) private(set) var indexKey: SecureBytes?
    @exclusivity(unchecked) private(set) var state: LockState = .neverUnlocked
    /// Protection classes whose keys are bound to a different device key than this machine's.
    @exclusivity(unchecked) private(set) var foreignDeviceClasses: Set<ProtectionClass> = []
    /// The header's `hasPassphrase` (`akpu` items need one), here so readers need not read the header.
    @exclusivity(unchecked) private(set) var hasPassphrase = false
    let gate = ReadWriteLock()

    init(hasPassphrase: Bool) { self.hasPassphrase = hasPassphrase }

    func key(for protection: ProtectionClass) -> SecureBytes? { classKeys[protection] }

    /// Unwraps the keys the device key alone opens; done when a vault is opened.
    func loadDeviceWrapped(header: VaultHeader, device: DeviceKey) throws {
        guard header.deviceKeyID == device.identifier else { return }
        for slot in KeyPlan.allSlots where KeyPlan.wrappers(forSlot: slot).contains(.device) {
            guard let entry = header.entry(slot: slot, wrapper: .device) else { throw KeychainStatus.decode }
            let key: SecureBytes
            do {
                key = try AEAD.open(entry.box, key: device.key,
                                    associatedData: header.associatedData(slot: slot, wrapper: .device))
            } catch { throw isAllocationFailure(error) ? KeychainStatus.allocate : KeychainStatus.decode }
            gate.withWriteLock { store(key, slot: slot) }
        }
    }

    /// Unwraps every key the passphrase key opens. Nothing changes unless the passphrase is right.
    /// - Throws: `authFailed` when the passphrase key does not open its entries.
    func unlock(header: VaultHeader, passphraseKey: SecureBytes, device: DeviceKey) throws {
        var opened: [(UInt8, SecureBytes)] = []
        var foreign: Set<ProtectionClass> = []
        for slot in KeyPlan.allSlots {
            let wrappers = KeyPlan.wrappers(forSlot: slot)
            if wrappers.contains(.passphrase) {
                guard let entry = header.entry(slot: slot, wrapper: .passphrase) else { throw KeychainStatus.decode }
                guard let key = try nilUnlessOutOfMemory({ try AEAD.open(entry.box, key: passphraseKey,
                                               associatedData: header.associatedData(slot: slot, wrapper: .passphrase)) })
                else { throw KeychainStatus.authFailed }
                opened.append((slot, key))
            } else if wrappers.contains(.deviceThenPassphrase) {
                guard let entry = header.entry(slot: slot, wrapper: .deviceThenPassphrase) else { throw KeychainStatus.decode }
                guard let inner = try nilUnlessOutOfMemory({ try AEAD.open(entry.box, key: passphraseKey,
                                                 associatedData: header.associatedData(slot: slot, wrapper: .deviceThenPassphrase)) })
                else { throw KeychainStatus.authFailed }
                let innerBox = inner.withUnsafeBytes { [UInt8]($0) }
                if let key = try nilUnlessOutOfMemory({ try AEAD.open(innerBox, key: device.key,
                                            associatedData: header.associatedData(slot: slot, wrapper: .deviceThenPassphrase, outerLayer: false)) }) {
                    opened.append((slot, key))
                } else {
                    foreign.insert(ProtectionClass(code: slot)!)
                }
            } else if header.deviceKeyID != device.identifier {
                foreign.insert(ProtectionClass(code: slot)!)
            }
        }
        gate.withWriteLock {
            for (slot, key) in opened { store(key, slot: slot) }
            foreignDeviceClasses = foreign
            state = .unlocked
        }
    }

    /// Wipes the keys of the WhenUnlocked family, once no search uses them. AfterFirstUnlock and
    /// Always keys stay. `alsoWipe` runs in the same moment, for what was opened with the keys
    /// (the vault's cached item keys).
    func lock(alsoWipe: () -> Void = {}) {
        gate.withWriteLock {
            for p in ProtectionClass.allCases where p.availability == .whileUnlocked {
                classKeys[p]?.wipe()
                classKeys[p] = nil
            }
            if state == .unlocked { state = .locked }
            alsoWipe()
        }
    }

    /// Wipes everything; the vault is closing.
    func wipeAll() {
        gate.withWriteLock {
            for (_, k) in classKeys { k.wipe() }
            classKeys = [:]
            indexKey?.wipe()
            indexKey = nil
        }
    }

    /// Called with `gate`'s write side held.
    fileprivate func store(_ key: SecureBytes, slot: UInt8) {
        if slot == VaultHeader.indexKeySlot {
            if indexKey == nil { indexKey = key } else { key.wipe() }
        } else if let p = ProtectionClass(code: slot) {
            if classKeys[p] == nil { classKeys[p] = key } else { key.wipe() }
        }
    }

    /// Seals a key under the wrappers the plan gives its slot.
    static func wrap(_ key: SecureBytes, slot: UInt8, header: VaultHeader,
                     passphraseKey: SecureBytes, device: DeviceKey) -> [VaultHeader.WrappedKey] {
        KeyPlan.wrappers(forSlot: slot).map { wrapper in
            let ad = header.associatedData(slot: slot, wrapper: wrapper)
            switch wrapper {
            case .passphrase:
                return .init(slot: slot, wrapper: wrapper, box: AEAD.seal(key, key: passphraseKey, associatedData: ad))
            case .device:
                return .init(slot: slot, wrapper: wrapper, box: AEAD.seal(key, key: device.key, associatedData: ad))
            case .deviceThenPassphrase:
                let inner = AEAD.seal(key, key: device.key,
                                      associatedData: header.associatedData(slot: slot, wrapper: wrapper, outerLayer: false))
                let box = inner.withUnsafeBytes { AEAD.seal($0, key: passphraseKey, associatedData: ad) }
                return .init(slot: slot, wrapper: wrapper, box: box)
            }
        }
    }

    /// Re-seals the outer passphrase layer of every passphrase-wrapped entry under a new header's
    /// passphrase key; device-only entries are kept as they are. Costs one seal per class key.
    static func rewrap(_ old: VaultHeader, oldKey: SecureBytes, into new: VaultHeader,
                       newKey: SecureBytes) throws -> [VaultHeader.WrappedKey] {
        try old.keys.map { entry in
            guard entry.wrapper != .device else { return entry }
            guard let inner = try nilUnlessOutOfMemory({ try AEAD.open(entry.box, key: oldKey,
                                             associatedData: old.associatedData(slot: entry.slot, wrapper: entry.wrapper)) })
            else { throw KeychainStatus.authFailed }
            let box = AEAD.seal(inner, key: newKey,
                                associatedData: new.associatedData(slot: entry.slot, wrapper: entry.wrapper))
            return .init(slot: entry.slot, wrapper: entry.wrapper, box: box)
        }
    }
}

extension KeyRing {
    /// A passphrase change: the header's new `hasPassphrase`, and, after a passphrase removal,
    /// the fresh akpu class key in place of the old one, which is wiped.
    func passphraseChanged(hasPassphrase: Bool, replacing key: SecureBytes?, for protection: ProtectionClass) {
        gate.withWriteLock {
            self.hasPassphrase = hasPassphrase
            guard let key else { return }
            let wasLoaded = classKeys[protection] != nil
            classKeys[protection]?.wipe()
            classKeys[protection] = nil
            if wasLoaded { store(key, slot: protection.code) }
        }
    }
}
