import KeychainCrypto
import KeychainSystem

/// Another host's change, checked and sealed for this vault ahead of its write
/// (`Vault.prepareSynced`): what `applySynced` would do to it before touching SQLite, done on
/// another thread while the previous batch is written. Holds ciphertext, clear metadata and
/// references to the keys it was sealed with, never a key's bytes.
public struct PreparedSync: @unchecked Sendable {
    // Unchecked: `classKey` and `indexKey` are compared by identity only, never read.
    /// The item sealed as a new row (row id 0, version 1; `applySynced` sets both), its lookup
    /// tokens and decoded attributes; nil for a delete or when it could not be prepared
    /// (`applySynced` then does it all itself, and throws what it throws).
    let item: StoredItem?
    let attributes: Attributes
    let tokens: [[UInt8]]
    let classKey: SecureBytes?
    let indexKey: SecureBytes?

    public static let none = PreparedSync(item: nil, attributes: [:], tokens: [], classKey: nil, indexKey: nil)
}

extension Vault {
    /// Checks and seals each write of `changes` for this vault as `applySynced` does (the
    /// attribute blob decoded and checked, a new item key, the three ciphertexts, the index
    /// tokens), without the write lock: under the keys' read side, as a search opens items
    /// (`withReader`), so a lock waits for it and it never sees a wiped key. Safe to run on
    /// another thread while `applySynced` writes an earlier batch.
    /// - Returns: one per change, in order; `.none` for a delete and for a write that cannot
    ///   be prepared now (a locked class key, a payload the vault refuses), which
    ///   `applySynced` then handles as without this.
    public func prepareSynced(_ changes: [SyncChange]) -> [PreparedSync] {
        keys.gate.withReadLock {
            changes.map { change in
                guard case .write(let p, _) = change, let indexKey = keys.indexKey,
                      let classKey = try? availableKey(for: p.protection),
                      let attributes = try? ItemCodec.decode(p.attributes),
                      (try? Self.checkSyncedRecord(attributes, p)) != nil,
                      let item = try? seal(uuid: p.uuid, rowID: 0, itemClass: p.itemClass, protection: p.protection,
                                           attributes: attributes, secret: p.secret, classKey: classKey,
                                           indexKey: indexKey, version: 1)
                else { return .none }
                return PreparedSync(item: item, attributes: attributes,
                                    tokens: lookupTokens(attributes, itemClass: p.itemClass, indexKey: indexKey),
                                    classKey: classKey, indexKey: indexKey)
            }
        }
    }

    /// `prepared`'s sealed item when it was made with the keys in force now (mutex held): a
    /// lock since, or a key replaced, and it is sealed again as without it.
    func usablePrepared(_ prepared: PreparedSync?, _ p: SyncPayload) -> PreparedSync? {
        guard let prepared, prepared.item?.uuid == p.uuid, let indexKey = keys.indexKey, prepared.indexKey === indexKey,
              let classKey = try? availableKey(for: p.protection), prepared.classKey === classKey else { return nil }
        return prepared
    }
}

extension Vault {
    /// Runs `body` (a long read: a new host's first sync) with the write connection's page
    /// cache at `cacheMiB` instead of the 8 MiB it keeps otherwise (`PRAGMA cache_size`), then
    /// gives the memory back (`PRAGMA shrink_memory`, then `malloc_trim`, without which glibc
    /// keeps the freed pages resident): at a million items the indexes' pages
    /// far exceed 8 MiB, and a batch's inserts, keyed by random-looking tokens and uuids, would
    /// read most of their pages from the kernel again and spill dirty ones to the WAL before
    /// the commit. Only the size of a cache changes: what is written, and when, does not.
    public func withLargeWriteCache<R>(_ cacheMiB: Int, _ body: () throws -> R) rethrows -> R {
        mutex.withLock { try? store.db.execute("PRAGMA cache_size=-\(max(cacheMiB * 1024, ItemStore.cacheKiB))") }
        defer {
            mutex.withLock { try? store.db.execute("PRAGMA cache_size=-\(ItemStore.cacheKiB); PRAGMA shrink_memory") }
            CurrentProcess.releaseFreeHeap()
        }
        return try body()
    }
}
