import Dispatch
import KeychainCore
import Synchronization

/// The entries (attributes, never secrets) of files the kernel asked about, so that `open`,
/// `getattr` and `lookup` of a known name need no search of the vault.
///
/// Only the file a name shows to the whole mount is kept (found with the mount's visible
/// groups); a caller whose groups do not include its group searches as before. Every change
/// drops the names it touches, a lock drops everything, and a search that raced with a change
/// does not store what it found: `store` takes the generation read before the search.
final class EntryCache: Sendable {
    /// Enough for `ls -l` of a large service; past it the cache starts again empty. An entry
    /// keeps only the attributes below (a few hundred bytes, plus a small item's sealed row).
    static let capacity = 32_768

    /// What `stat`, `open` and the approval prompt read; extended attributes search instead.
    /// The primary key stays too: an entry gives its item's name (`FileEntry.name`).
    static let keptAttributes: Set<AttributeKey> = Set([.modificationDate, Vault.secretModified, .accessControl, .label, .service,
                                                        .server, .account, .accessGroup, .accessible, .keyClass, .type,
                                                        .applicationLabel, .serialNumber, .isExtractable] + FileNames.qualifierKeys)

    private struct Contents {
        var entries: [ItemName: FileEntry] = [:]
        /// Counts changes, so a search that raced with one stores nothing.
        var generation: UInt64 = 0
    }

    private let contents = Mutex(Contents())

    /// Read before a search whose result may be stored.
    var currentGeneration: UInt64 { contents.withLock { $0.generation } }

    func entry(_ name: ItemName) -> FileEntry? {
        contents.withLock { $0.entries[name] }
    }

    /// Keeps `entry` as the file of `name` unless something changed since
    /// `generation` was read.
    /// `evicting: false` (a listing priming the cache) stores nothing once the cache is full.
    func store(_ entry: FileEntry, name: ItemName, generation seen: UInt64, evicting: Bool = true) {
        var kept = entry
        kept.attributes = entry.attributes.filter { Self.keptAttributes.contains($0.key) }
        contents.withLock { c in
            guard seen == c.generation else { return }
            if c.entries.count >= Self.capacity {
                guard evicting else { return }
                c.entries.removeAll(keepingCapacity: true)
            }
            c.entries[name] = kept
        }
    }

    /// Drops one item's entry, or a whole directory's when `name` is nil.
    func invalidate(_ directory: Directory, name: ItemName?) {
        contents.withLock { c in
            c.generation &+= 1
            if let name {
                c.entries[name] = nil
            } else {
                c.entries = c.entries.filter { $0.key.service != directory.service || $0.key.itemClass != directory.itemClass }
            }
        }
    }

    /// Empties the cache; the old entries (attributes, never secrets) are freed on another
    /// thread, so that a lock does not wait for tens of thousands of deallocations.
    func removeAll() {
        let old = contents.withLock { c -> [ItemName: FileEntry] in
            c.generation &+= 1
            defer { c.entries = [:] }
            return c.entries
        }
        guard old.count > 1024 else { return }
        DispatchQueue.global(qos: .utility).async { withExtendedLifetime(old) {} }
    }
}
