import KeychainCore
import KeychainCrypto
import KeychainKeys
import Synchronization

/// The private keys `useKey` opened, kept parsed, so that the next use of a key costs the vault's
/// check of its stamp and the operation, not a search, three decryptions and an OpenSSL parse.
///
/// An entry holds OpenSSL's key object (`AsymmetricKey`, an `EVP_PKEY` whose private numbers
/// live in libcrypto's secure heap, `LibCrypto.ready`, and are cleared when it is freed), the
/// attributes a use checks (usage flags and key type) and the vault's stamp of the open; never
/// the key's bytes, which are wiped as soon as they are parsed. An evicted or dropped entry's
/// key is freed when its last use ends.
///
/// What a use is allowed does not depend on the cache: every use, hit or miss, passes the
/// vault's checks for its own caller (`Vault.checkOpened`: the caller's groups, the lock,
/// presence approval), so a key another caller's use put here is refused to a caller who may not
/// read its item, as it is without the cache. An entry is used only while no item was written and
/// the vault not locked since its open (the stamp); besides, a lock (`Daemon.lockEverywhere`,
/// the idle lock too) and any change of items or groups (`Daemon.itemsChanged`: adds, updates,
/// deletes, sync applies, backup imports, group changes) empty the cache at once.
///
/// Keys of a token (`kSecAttrTokenIDSecureEnclave`) are not kept: their bytes are a TPM-wrapped
/// blob that each use loads over its own TPM connection (`TokenKeys.use`), and a loaded handle
/// does not outlive that connection, so there is nothing here to keep that would save the TPM
/// round trip.
final class OpenedKeys: Sendable {
    /// Entries at the most; past it the least recently used goes.
    static let limit = 64

    /// The attributes a use reads (`KeyRequests.checkUsage`, the key type).
    static let keptAttributes: [AttributeKey] = [.canSign, .canDecrypt, .canDerive, .keyType]

    private struct Entry {
        let opened: OpenedKey
        let stamp: OpenedKeyStamp
        var lastUse: UInt64
    }

    private struct State {
        var entries: [PersistentRef: Entry] = [:]
        var clock: UInt64 = 0
        /// `removeAll` calls: a key opened before one is not added after it.
        var wipes: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Entries now (for tests).
    var count: Int { state.withLock { $0.entries.count } }

    /// Drops every entry; their keys are freed as their uses end.
    func removeAll() {
        let dropped = state.withLock { s in
            s.wipes &+= 1
            defer { s.entries = [:] }
            return s.entries
        }
        _ = dropped  // freed here, outside the lock
    }

    /// The key `ref` names, opened for a caller of `accessGroups` by the vault's rules: from the
    /// cache when the vault says its stamp still holds for this caller, else opened from the
    /// vault (and kept, unless it is a token key, its bytes are not a key, or the vault is locked).
    /// - Throws: what `Vault.privateKey` throws for this caller.
    func open(_ ref: PersistentRef, in vault: Vault, accessGroups: [String],
              approved: Set<PersistentRef> = []) throws -> OpenedKey {
        let (cached, wipes) = state.withLock { s -> (Entry?, UInt64) in
            s.clock &+= 1
            s.entries[ref]?.lastUse = s.clock
            return (s.entries[ref], s.wipes)
        }
        if let cached {
            if try vault.checkOpened(cached.stamp, accessGroups: accessGroups, approved: approved) { return cached.opened }
            state.withLock { s in if s.entries[ref]?.stamp == cached.stamp { s.entries[ref] = nil } }
        }
        let (attributes, secret, stamp) = try vault.privateKey(ref, accessGroups: accessGroups, approved: approved)
        if TokenKeys.isTokenKey(attributes) { return OpenedKey(attributes: attributes, key: nil, tokenBlob: secret) }
        defer { secret.wipe() }
        let kept = attributes.filter { Self.keptAttributes.contains($0.key) }
        guard let type = attributes[.keyType]?.numberValue,
              let key = try? secret.withUnsafeBytes({ try AsymmetricKey.apple(type: type, isPrivate: true, $0) })
        else { return OpenedKey(attributes: kept, key: nil, tokenBlob: nil) }  // the item's bytes are not the key it says
        let opened = OpenedKey(attributes: kept, key: key, tokenBlob: nil)
        if stamp.openedUnlocked { keep(opened, stamp, unlessWipedSince: wipes) }
        return opened
    }

    private func keep(_ opened: OpenedKey, _ stamp: OpenedKeyStamp, unlessWipedSince wipes: UInt64) {
        let evicted = state.withLock { s -> Entry? in
            guard s.wipes == wipes else { return nil }
            var evicted: Entry?
            if s.entries[stamp.ref] == nil, s.entries.count >= Self.limit,
               let oldest = s.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                evicted = s.entries.removeValue(forKey: oldest.key)
            }
            s.clock &+= 1
            s.entries[stamp.ref] = Entry(opened: opened, stamp: stamp, lastUse: s.clock)
            return evicted
        }
        _ = evicted  // freed here, outside the lock
    }
}

/// A private key as a use needs it.
struct OpenedKey: Sendable {
    /// The attributes a use checks; all of the item's for a token key.
    let attributes: Attributes
    /// The parsed key; nil for a token key, or for bytes that are not the key the item says.
    let key: AsymmetricKey?
    /// A token key's TPM-wrapped blob, which the use wipes.
    let tokenBlob: SecureBytes?
}
