import KeychainCore
import Synchronization

/// The values behind hashed long names (`%H` and 32 hex digits, docs/filesystem.md). A hash
/// cannot be reversed, so a name is matched against the vault's values; this index does that
/// once per change of the vault, not once per lookup, so that looking up a name that cannot
/// exist costs a dictionary lookup instead of decrypting every item.
final class LongNames: Sendable {
    private struct Index: Sendable {
        /// What the index was built from: the mount's entry generation and the lock state.
        var builtFor: (generation: UInt64, state: LockState)?
        var directories: [ItemClass: [[UInt8]: [UInt8]]] = [:]
        var items: [Directory: [[UInt8]: ItemName]] = [:]
    }
    private let index = Mutex(Index())

    /// Whether `name` has the form of a hashed name at all; other `%H` names cannot exist.
    static func isHashed(_ name: [UInt8]) -> Bool {
        guard name.count == 34, name.starts(with: Array("%H".utf8)) else { return false }
        return name.dropFirst(2).allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) }
    }

    /// The service or server value (`directory` nil) of a class whose hashed name is `name`, or
    /// the item of `directory`; nil when none has it. `generation` is read before the listing,
    /// so a change during it makes the next call list again.
    func resolve(_ name: [UInt8], itemClass: ItemClass, in directory: Directory?, generation: UInt64, state: LockState,
                 listing: ((FileEntry) -> Void) throws -> Void) rethrows -> (service: [UInt8]?, item: ItemName?) {
        guard Self.isHashed(name) else { return (nil, nil) }
        return try index.withLock { index in
            // Holding the lock through a listing: concurrent lookups wait for one listing.
            if index.builtFor?.generation != generation || index.builtFor?.state != state {
                index = Index()
                try listing { e in
                    let s = FileNames.directoryName(e.service, itemClass: e.itemClass)
                    if Self.isHashed(s) { index.directories[e.itemClass, default: [:]][s] = e.service }
                    let item = e.name
                    let a = FileNames.fileName(of: item)
                    if Self.isHashed(a) { index.items[Directory(itemClass: e.itemClass, service: e.service), default: [:]][a] = item }
                }
                index.builtFor = (generation, state)
            }
            guard let directory else { return (index.directories[itemClass]?[name], nil) }
            return (nil, index.items[directory]?[name])
        }
    }
}
