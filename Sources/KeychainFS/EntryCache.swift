import Dispatch
import KeychainCore
import KeychainSystem
import Synchronization

/// The entries (attributes, never secrets) of files the kernel asked about, so that `open`,
/// `getattr` and `lookup` of a known name need no search of the vault.
///
/// Only the file a name shows to the whole mount is kept (found with the mount's visible
/// groups); a caller whose groups do not include its group searches as before. Every change
/// drops the names it touches, a lock drops everything, and a search that raced with a change
/// does not store what it found: `store` takes the generation read before the search.
final class EntryCache: Sendable {
    /// The bytes the entries may hold (`FileEntry.footprint`): an entry keeps only the
    /// attributes below, about 1.5 KB with a small item's sealed row, so some thousands. Past it the cache starts
    /// again empty (a lookup) or stores no more (a listing priming it).
    static let capacity = 4 << 20

    /// What `stat`, `open` and the approval prompt read; extended attributes search instead.
    /// The primary key stays too: an entry gives its item's name (`FileEntry.name`).
    /// With what a file search reads of an item (`Vault.fileSearchAttributes`: small values,
    /// but a certificate's issuer), so that an entry a lookup opens with only these is kept as
    /// it is, with no copy made to leave others out.
    static let keptAttributes: Set<AttributeKey> = Set(keptKeys)

    private static let keptKeys: [AttributeKey] = [.modificationDate, Vault.secretModified, .accessControl, .label, .service,
                                                   .server, .account, .accessGroup, .accessible, .keyClass, .type,
                                                   .applicationLabel, .serialNumber, .isExtractable, .isSensitive]
        + FileNames.qualifierKeys + Vault.fileSearchAttributes

    /// What a lookup opens of an item for the cache: exactly what it keeps.
    static let openedAttributes = Vault.fileSelection(keptKeys)

    /// Directories (services, servers) seen to hold an item for the whole mount, each with the
    /// group and protection class of the item that showed it: a lookup of the directory again
    /// needs no search while that group is shown and that class is available. A directory goes
    /// with any change in it, as its entries do.
    struct DirectoryWitness: Sendable {
        let group: String
        let protection: ProtectionClass
    }

    /// Directories kept at most (about 100 bytes each); past it the record starts again empty.
    static let directoryCapacity = 16_384

    private struct Contents {
        var entries: [ItemName: FileEntry] = [:]
        var directories: [Directory: DirectoryWitness] = [:]
        var bytes = 0
        /// Counts changes, so a search that raced with one stores nothing.
        var generation: UInt64 = 0
    }

    private let contents = Mutex(Contents())

    /// Read before a search whose result may be stored.
    var currentGeneration: UInt64 { contents.withLock { $0.generation } }

    func entry(_ name: ItemName) -> FileEntry? {
        contents.withLock { $0.entries[name] }
    }

    /// How many bytes the entries hold now.
    var bytes: Int { contents.withLock { $0.bytes } }

    /// Keeps `entry` as the file of `name` unless something changed since
    /// `generation` was read.
    /// `evicting: false` (a listing priming the cache) stores nothing once the cache is full.
    /// `opened: true` says the entry was opened with `openedAttributes` alone (a lookup's
    /// search), so it holds nothing the cache leaves out and is kept as it is, unchecked; a
    /// listing's entries have every attribute and are filtered.
    /// Returns false when it stored nothing because the cache was full.
    @discardableResult
    func store(_ entry: FileEntry, name: ItemName, generation seen: UInt64, evicting: Bool = true, opened: Bool = false) -> Bool {
        var kept = entry
        if opened {
            assert(entry.attributes.keys.allSatisfy { Self.keptAttributes.contains($0) }, "opened with more than openedAttributes")
        } else if entry.attributes.keys.contains(where: { !Self.keptAttributes.contains($0) }) {
            kept.attributes = entry.attributes.filter { Self.keptAttributes.contains($0.key) }
        }
        let size = kept.footprint
        var old: [ItemName: FileEntry] = [:]
        defer { if !old.isEmpty { Self.freeLater(old) } }
        return contents.withLock { c in
            guard seen == c.generation else { return true }
            if c.bytes + size > Self.capacity {
                guard evicting else { return false }
                old = c.entries
                // Sized as it was: random lookups fill it again, without growing it step by step.
                c.entries = Dictionary(minimumCapacity: old.count)
                c.bytes = 0
            }
            if let replaced = c.entries.updateValue(kept, forKey: name) { c.bytes -= replaced.footprint }
            c.bytes += size
            return true
        }
    }

    /// The item that last showed `directory` to the whole mount, if nothing changed in it since.
    func witness(_ directory: Directory) -> DirectoryWitness? {
        contents.withLock { $0.directories[directory] }
    }

    /// Keeps `witness` as what shows `directory` unless something changed since `generation`
    /// was read.
    func store(_ witness: DirectoryWitness, directory: Directory, generation seen: UInt64) {
        contents.withLock { c in
            guard seen == c.generation else { return }
            if c.directories.count >= Self.directoryCapacity { c.directories.removeAll(keepingCapacity: true) }
            c.directories[directory] = witness
        }
    }

    /// Drops one item's entry, or a whole directory's when `name` is nil; either way the
    /// directory's witness goes (its last item may be the one that changed).
    func invalidate(_ directory: Directory, name: ItemName?) {
        contents.withLock { c in
            c.generation &+= 1
            c.directories.removeValue(forKey: directory)
            if let name {
                if let gone = c.entries.removeValue(forKey: name) { c.bytes -= gone.footprint }
            } else {
                c.entries = c.entries.filter { $0.key.service != directory.service || $0.key.itemClass != directory.itemClass }
                c.bytes = c.entries.values.reduce(0) { $0 + $1.footprint }
            }
        }
    }

    /// Empties the cache; the old entries (attributes, never secrets) are freed on another
    /// thread, so that a lock does not wait for tens of thousands of deallocations.
    func removeAll() {
        let old = contents.withLock { c -> [ItemName: FileEntry] in
            c.generation &+= 1
            c.bytes = 0
            c.directories = [:]
            defer { c.entries = [:] }
            return c.entries
        }
        guard old.count > 1024 else { return }
        Self.freeLater(old)
    }

    /// Frees many entries on another thread, then gives the heap's free pages back: a lock
    /// or a full cache does not wait for tens of thousands of deallocations.
    private static func freeLater(_ entries: [ItemName: FileEntry]) {
        let held = Released(entries)
        DispatchQueue.global(qos: .utility).async {
            held.drop()
            CurrentProcess.releaseFreeHeap()
        }
    }
}
