import KeychainCore

/// The entries (attributes, never secrets) of files the kernel asked about, so that `open`,
/// `getattr` and `lookup` of a known name need no search of the vault.
///
/// Only the file a name shows to the whole mount is kept (found with the mount's visible
/// groups); a caller whose groups do not include its group searches as before. Every change
/// drops the names it touches, a lock drops everything, and a search that raced with a change
/// does not store what it found: `store` takes the generation read before the search.
final class EntryCache: @unchecked Sendable {
    private struct Key: Hashable {
        let service: [UInt8]
        let account: [UInt8]
    }

    /// Enough for `ls -l` of a large service; past it the cache starts again empty. An entry
    /// keeps only the attributes below (a few hundred bytes, plus a small item's sealed row).
    static let capacity = 32_768

    /// What `stat`, `open` and the approval prompt read; extended attributes search instead.
    static let keptAttributes: Set<String> = ["mdat", Vault.secretModified, "accc", "labl", "svce", "acct", "agrp", "pdmn"]

    private let mutex = PThreadMutex()
    private var entries: [Key: FileEntry] = [:]
    private var generation: UInt64 = 0

    private func locked<R>(_ body: () -> R) -> R { mutex.withLock(body) }

    /// Read before a search whose result may be stored.
    var currentGeneration: UInt64 { locked { generation } }

    func entry(service: [UInt8], account: [UInt8]) -> FileEntry? {
        locked { entries[Key(service: service, account: account)] }
    }

    /// Keeps `entry` as the file of `service`/`account` unless something changed since
    /// `generation` was read.
    /// `evicting: false` (a listing priming the cache) stores nothing once the cache is full.
    func store(_ entry: FileEntry, service: [UInt8], account: [UInt8], generation seen: UInt64, evicting: Bool = true) {
        locked {
            guard seen == generation else { return }
            if entries.count >= Self.capacity {
                guard evicting else { return }
                entries.removeAll(keepingCapacity: true)
            }
            var kept = entry
            kept.attributes = entry.attributes.filter { Self.keptAttributes.contains($0.key) }
            entries[Key(service: service, account: account)] = kept
        }
    }

    /// Drops one account's entry, or a whole service's when `account` is nil.
    func invalidate(service: [UInt8], account: [UInt8]?) {
        locked {
            generation &+= 1
            if let account {
                entries[Key(service: service, account: account)] = nil
            } else {
                entries = entries.filter { $0.key.service != service }
            }
        }
    }

    func removeAll() {
        locked {
            generation &+= 1
            entries.removeAll()
        }
    }
}
