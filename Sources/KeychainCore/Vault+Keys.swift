import KeychainCrypto
import Synchronization

/// Private keys the daemon uses for its callers (`SecKeyCreateSignature` and friends on a key
/// from the keychain): the bytes leave the vault for the operation only, never in a reply.
extension Vault {
    /// The attributes and key bytes of the private key `ref` names, for an operation the daemon
    /// runs with it, and the stamp that lets the daemon use the key it made of them again
    /// (`checkOpened`). The same rules as a search that returns the secret: the caller's access
    /// groups, the class key's lock state and presence approval (`approved`); what a search
    /// does not give, extractability is not asked for.
    /// - Throws: `itemNotFound` (also for an item outside `accessGroups` or a public key),
    ///   `interactionNotAllowed` when locked or not approved, `decode` when damaged.
    public func privateKey(_ ref: PersistentRef, accessGroups: [String], approved: Set<PersistentRef> = [])
        throws -> (attributes: Attributes, secret: SecureBytes, stamp: OpenedKeyStamp) {
        guard ref.itemClass == .key else { throw KeychainStatus.itemNotFound }
        var query = try ParsedQuery([.valuePersistentRef: .data(ref.bytes)], operation: .search)
        query.synchronizable = nil  // a reference names one item whatever its sync
        // The counts before the search: a write or lock that comes while it runs makes the stamp old.
        let writesBefore = store.rowWrites.load(ordering: .acquiring), locksBefore = locks.load(ordering: .acquiring)
        return try withReader { reader in
            let matches = try search(query, in: reader, accessGroups: accessGroups, needSecret: true, limit: 1, approved: approved)
            guard let m = matches.first, m.attributes[.keyClass]?.integerView == 1, let secret = m.secret,
                  case .string(let group)? = m.attributes[.accessGroup] else {
                throw KeychainStatus.itemNotFound
            }
            let control = m.attributes[.accessControl].flatMap(AccessControl.init)
            let stamp = OpenedKeyStamp(ref: ref, rowWrites: writesBefore, locks: locksBefore, group: group,
                                       protection: m.stored.protection, requiresPresence: control?.requiresPresence == true,
                                       openedUnlocked: keys.state == .unlocked)
            return (m.attributes, secret, stamp)
        }
    }

    /// Whether the key `stamp` came with may be used again without opening it, for a caller of
    /// `accessGroups`: true when no item row was written and the vault was not locked since, and
    /// `privateKey` would give it now, by the same checks in the same order (groups, lock,
    /// presence). False: open it again.
    /// - Throws: what `privateKey` throws: `itemNotFound` for a key outside `accessGroups`,
    ///   `interactionNotAllowed` for a locked class or a presence-gated key not in `approved`,
    ///   `decode` for a class bound to another device.
    public func checkOpened(_ stamp: OpenedKeyStamp, accessGroups: [String], approved: Set<PersistentRef> = []) throws -> Bool {
        // Under the read side of the keys' gate, as a search reads them.
        try keys.gate.withReadLock {
            guard stamp.rowWrites == store.rowWrites.load(ordering: .acquiring),
                  stamp.locks == locks.load(ordering: .acquiring) else { return false }
            // As `search`: no groups finds nothing; the index key first; a row outside the groups is not found.
            guard !accessGroups.isEmpty else { throw KeychainStatus.itemNotFound }
            guard keys.indexKey != nil else { throw KeychainStatus.interactionNotAllowed }
            guard accessGroups.contains(stamp.group) else { throw KeychainStatus.itemNotFound }
            _ = try availableKey(for: stamp.protection)
            if stamp.requiresPresence && !approved.contains(stamp.ref) { throw KeychainStatus.interactionNotAllowed }
            return true
        }
    }

    /// Whether a match is a private key stored with `extr` false: its bytes are never returned.
    static func isUnextractable(_ m: Match) -> Bool {
        m.stored.itemClass == .key && m.value(.keyClass)?.integerView == 1 && m.value(.isExtractable)?.integerView == 0
    }

    /// Whether a match is a private key stored with `sens` true: macOS gives such a key out only
    /// wrapped (encrypted under a passphrase), never in the clear, and the keychain has no
    /// wrapped export, so its bytes are not returned either.
    static func isSensitive(_ m: Match) -> Bool {
        m.stored.itemClass == .key && m.value(.keyClass)?.integerView == 1 && m.value(.isSensitive)?.integerView == 1
    }
}

/// What `Vault.privateKey` checked when it opened a key: its item, its group, protection and
/// presence gate, and the vault's write and lock counts then, which `Vault.checkOpened` compares.
public struct OpenedKeyStamp: Sendable, Equatable {
    public let ref: PersistentRef
    let rowWrites: UInt64
    let locks: UInt64
    let group: String
    let protection: ProtectionClass
    let requiresPresence: Bool
    /// The vault was unlocked at the open: a key opened while locked (an Always-class key) is not
    /// kept, so that nothing opened outlives a lock.
    public let openedUnlocked: Bool
}
