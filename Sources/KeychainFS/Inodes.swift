import Glibc

/// What an inode stands for. Identity is by name, so a path keeps its inode while its item is
/// updated, and a path that comes back after a lock gets the same number while the kernel still
/// knows it.
enum Node: Hashable, Sendable {
    case root
    case service([UInt8])
    case item(service: [UInt8], account: [UInt8])

    var service: [UInt8]? {
        switch self {
        case .root: return nil
        case .service(let s): return s
        case .item(let s, _): return s
        }
    }
}

/// Inode numbers for the nodes the kernel knows, with its lookup counts (released by forget).
final class InodeTable: @unchecked Sendable {
    static let rootIno: UInt64 = 1
    private var mutex = pthread_mutex_t()
    private var nodes: [UInt64: (node: Node, lookups: UInt64)] = [rootIno: (.root, 1)]
    private var numbers: [Node: UInt64] = [.root: rootIno]
    private var next: UInt64 = 2

    init() { pthread_mutex_init(&mutex, nil) }

    private func locked<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }

    func node(_ ino: UInt64) -> Node? { locked { nodes[ino]?.node } }

    /// The inode for `node`, counting one kernel lookup.
    func lookedUp(_ node: Node) -> UInt64 {
        locked {
            if let ino = numbers[node] {
                nodes[ino]!.lookups += 1
                return ino
            }
            let ino = next
            next += 1
            numbers[node] = ino
            nodes[ino] = (node, 1)
            return ino
        }
    }

    /// The inode already assigned to `node`, without counting a lookup.
    func existing(_ node: Node) -> UInt64? { locked { numbers[node] } }

    func forget(_ ino: UInt64, _ count: UInt64) {
        locked {
            guard ino != InodeTable.rootIno, let entry = nodes[ino] else { return }
            if entry.lookups <= count {
                nodes[ino] = nil
                numbers[entry.node] = nil
            } else {
                nodes[ino]!.lookups -= count
            }
        }
    }

    /// Moves a node's number to its new name, as the kernel does on rename; whatever the new
    /// name had is forgotten (it was replaced).
    func rename(_ old: Node, to new: Node) {
        locked {
            guard let ino = numbers.removeValue(forKey: old) else { return }
            if let replaced = numbers.removeValue(forKey: new) { nodes[replaced] = nil }
            numbers[new] = ino
            nodes[ino]!.node = new
        }
    }

    /// Renames a service directory and every item under it.
    func renameService(_ old: [UInt8], to new: [UInt8]) {
        let affected = locked { numbers.keys.filter { $0.service == old } }
        for node in affected {
            switch node {
            case .service: rename(node, to: .service(new))
            case .item(_, let a): rename(node, to: .item(service: new, account: a))
            case .root: continue
            }
        }
    }

    /// The service directories the kernel knows, with their inodes, for invalidation.
    func services() -> [(UInt64, [UInt8])] {
        locked {
            nodes.compactMap { ino, entry in
                if case .service(let s) = entry.node { return (ino, s) }
                return nil
            }
        }
    }
}
