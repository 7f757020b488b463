import CFuse
import Glibc
import KeychainCore
import Synchronization

/// What an inode stands for. Identity is by name, so a path keeps its inode while its item is
/// updated, and a path that comes back after a lock gets the same number while the kernel still
/// knows it.
enum Node: Hashable, Sendable {
    case root
    /// A class's top-level directory (`/.internet`).
    case classRoot(ItemClass)
    /// A service's directory (generic passwords) or a server's (under `/.internet`).
    case service(ItemClass, [UInt8])
    case item(ItemName)

    /// The directory's or item's class and service (server); nil for the root and class roots.
    var directory: Directory? {
        switch self {
        case .root, .classRoot: return nil
        case .service(let c, let s): return Directory(itemClass: c, service: s)
        case .item(let n): return Directory(itemClass: n.itemClass, service: n.service)
        }
    }

    /// The attribute a directory node names (`svce`, `srvr`).
    var directoryAttribute: AttributeKey { directory?.itemClass == .internetPassword ? .server : .service }

    /// The directory a node of `directory` lives in (the root for a class root).
    static func parent(of directory: Directory) -> Node {
        directory.itemClass == .genericPassword || FileNames.isFlat(directory.itemClass) ? .root : .classRoot(directory.itemClass)
    }
}

/// A directory of items: one service of generic passwords, or one server of internet passwords;
/// for keys and certificates, which sit in their class root, that root (`service` empty).
struct Directory: Hashable, Sendable {
    let itemClass: ItemClass
    let service: [UInt8]

    var node: Node { FileNames.isFlat(itemClass) ? .classRoot(itemClass) : .service(itemClass, service) }
    /// Its name in its parent.
    var fileName: [UInt8] {
        FileNames.isFlat(itemClass) ? FileNames.classDirectory(itemClass)! : FileNames.directoryName(service, itemClass: itemClass)
    }
}

/// Inode numbers for the nodes the kernel knows, with its lookup counts (released by forget).
final class InodeTable: Sendable {
    static let rootIno: UInt64 = 1

    private struct Numbers {
        var nodes: [UInt64: (node: Node, lookups: UInt64)] = [rootIno: (.root, 1)]
        var numbers: [Node: UInt64] = [.root: rootIno]
        var next: UInt64 = 2

        mutating func forget(_ ino: UInt64, _ count: UInt64) {
            guard ino != InodeTable.rootIno, let index = nodes.index(forKey: ino) else { return }
            let entry = nodes.values[index]
            if entry.lookups <= count {
                nodes.remove(at: index)
                numbers[entry.node] = nil
            } else {
                nodes.values[index].lookups -= count
            }
        }
    }

    private let table = Mutex(Numbers())

    func node(_ ino: UInt64) -> Node? { table.withLock { $0.nodes[ino]?.node } }

    /// The inode for `node`, counting one kernel lookup.
    func lookedUp(_ node: Node) -> UInt64 {
        table.withLock { t in
            if let ino = t.numbers[node] {
                t.nodes[ino]!.lookups += 1
                return ino
            }
            let ino = t.next
            t.next += 1
            t.numbers[node] = ino
            t.nodes[ino] = (node, 1)
            return ino
        }
    }

    /// The inode already assigned to `node`, without counting a lookup.
    func existing(_ node: Node) -> UInt64? { table.withLock { $0.numbers[node] } }

    func forget(_ ino: UInt64, _ count: UInt64) {
        table.withLock { $0.forget(ino, count) }
    }

    /// A batch of forgets (FUSE_BATCH_FORGET) under one lock.
    func forget(_ batch: UnsafeBufferPointer<fuse_forget_data>) {
        table.withLock { t in
            for f in batch { t.forget(f.ino, f.nlookup) }
        }
    }

    /// Moves a node's number to its new name, as the kernel does on rename; whatever the new
    /// name had is forgotten (it was replaced).
    func rename(_ old: Node, to new: Node) {
        table.withLock { t in
            guard let ino = t.numbers.removeValue(forKey: old) else { return }
            if let replaced = t.numbers.removeValue(forKey: new) { t.nodes[replaced] = nil }
            t.numbers[new] = ino
            t.nodes[ino]!.node = new
        }
    }

    /// Renames a service directory and every item under it.
    func renameService(_ old: Directory, to new: [UInt8]) {
        let affected = table.withLock { $0.numbers.keys.filter { $0.directory == old } }
        for node in affected {
            switch node {
            case .service(let c, _): rename(node, to: .service(c, new))
            case .item(var n):
                n.service = new
                rename(node, to: .item(n))
            case .root, .classRoot: continue
            }
        }
    }

    /// The directories the kernel knows (services, servers, class roots), with their inodes,
    /// for invalidation.
    func directories() -> [(UInt64, Node)] {
        table.withLock { t in
            t.nodes.compactMap { ino, entry in
                switch entry.node {
                case .service, .classRoot: return (ino, entry.node)
                default: return nil
                }
            }
        }
    }
}
