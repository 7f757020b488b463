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

    /// The node with an account of its own: a name kept for as long as the kernel holds it is
    /// allocated apart from the listing it came in, so that the listing's pages can go back to
    /// the system when it is freed.
    var ownCopy: Node {
        guard case .item(var n) = self else { return self }
        n.account = n.account.withUnsafeBufferPointer { Array($0) }
        return .item(n)
    }

    /// The directory this node is listed in; nil for the root.
    var parent: Node? {
        switch self {
        case .root: return nil
        case .classRoot: return .root
        case .service(let c, let s): return Node.parent(of: Directory(itemClass: c, service: s))
        case .item(let n): return Directory(itemClass: n.itemClass, service: n.service).node
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
///
/// Compact at a million names: an inode's low 32 bits are one more than its slot in one array,
/// and the way back from a node to its number is an open-addressing table of 4-byte slot
/// numbers (`NodeIndex`), so each node is held once. A slot the kernel has forgotten is given
/// to the next new node with its generation (the high 32 bits) counted up, so that no number
/// ever names two files in one mount's life.
final class InodeTable: Sendable {
    static let rootIno: UInt64 = 1

    /// One inode: its node, nil once the node was replaced by a rename (the kernel may still
    /// hold the number until it forgets it), and the kernel's lookup count; free when both are gone.
    fileprivate struct Slot {
        var node: Node?
        var lookups: UInt64
        var generation: UInt32 = 0
        /// Set by every request that names the inode, cleared by each idle sweep.
        var used = true
        var isFree: Bool { node == nil && lookups == 0 }
    }

    private struct Numbers {
        var slots: [Slot] = [Slot(node: .root, lookups: 1)]
        /// Free slots below `slots.count`, reused lowest first before the array grows.
        var free = FreeSlots()
        var index = NodeIndex()
        /// Slots in use, the root's included.
        var live = 1
        /// The most slots there ever were, and the last generation given: a slot below that
        /// mark had numbers before, and takes the next generation.
        var highWater = 1
        var lastGeneration: UInt32 = 0

        /// The slot `ino` names, if it names one now (its generation is the slot's).
        func slot(_ ino: UInt64) -> Int? {
            let low = ino & 0xffff_ffff
            guard low >= 1, low <= UInt64(slots.count) else { return nil }
            let i = Int(low - 1)
            return UInt64(slots[i].generation) == ino >> 32 ? i : nil
        }

        func number(of slot: Int) -> UInt64 { UInt64(slots[slot].generation) << 32 | UInt64(slot + 1) }

        func number(_ node: Node, hash: Int? = nil) -> UInt64? {
            index.find(node, hash: hash ?? node.hashValue, in: slots).map { number(of: Int($0)) }
        }

        /// `hash`: the node's `hashValue`, when the caller has it already.
        mutating func add(_ given: Node, hash: Int? = nil) -> UInt64 {
            let node = given.ownCopy
            var slot = Int32(slots.count)
            // (The free list may still name slots past the end, dropped with the tail: the
            // highest, so once one comes every one left is past it.)
            while let reused = free.popLowest() {
                guard Int(reused) < slots.count else { continue }
                slot = reused
                break
            }
            var generation: UInt32 = 0
            if Int(slot) < highWater {
                lastGeneration &+= 1
                generation = lastGeneration
            }
            highWater = max(highWater, Int(slot) + 1)
            if Int(slot) < slots.count {
                slots[Int(slot)] = Slot(node: node, lookups: 1, generation: generation)
            } else {
                slots.append(Slot(node: node, lookups: 1, generation: generation))
            }
            index.insert(slot, for: node, hash: hash ?? node.hashValue, in: slots)
            live += 1
            return number(of: Int(slot))
        }

        mutating func forget(_ ino: UInt64, _ count: UInt64) {
            guard ino != InodeTable.rootIno, let i = slot(ino), !slots[i].isFree else { return }
            guard slots[i].lookups <= count else { return slots[i].lookups -= count }
            let node = slots[i].node
            slots[i].node = nil
            slots[i].lookups = 0
            live -= 1
            if let node { index.remove(Int32(i), of: node, in: slots) }
            free.insert(Int32(i))
            if i == slots.count - 1 { dropFreeTail() }
        }

        /// Detaches a node from its number (replaced by a rename): lookups of the name no longer
        /// find it, and the number stays taken until the kernel forgets it.
        mutating func detach(_ node: Node) {
            guard let slot = index.find(node, in: slots) else { return }
            slots[Int(slot)].node = nil
            index.remove(slot, of: node, in: slots)
        }

        mutating func move(_ old: Node, to new: Node) {
            guard let slot = index.find(old, in: slots) else { return }
            slots[Int(slot)].node = nil
            index.remove(slot, of: old, in: slots)
            detach(new)
            slots[Int(slot)].node = new
            index.insert(slot, for: new, in: slots)
        }

        /// After the kernel forgot the newest numbers (a large listing it no longer holds):
        /// the free slots at the end go, and once most of the array is unused it is copied at
        /// its new size, so that its memory is given back.
        mutating func dropFreeTail() {
            while let last = slots.last, last.isFree, slots.count > 1 { slots.removeLast() }
            guard slots.capacity > 4 * max(slots.count, 1024) else { return }
            slots = slots.fitted()
            free.removeAll(from: Int32(slots.count))
        }
    }

    private let table = Mutex(Numbers())

    func node(_ ino: UInt64) -> Node? {
        table.withLock { t in
            guard let i = t.slot(ino) else { return nil }
            t.slots[i].used = true
            return t.slots[i].node
        }
    }

    /// The inode for `node`, counting one kernel lookup.
    func lookedUp(_ node: Node) -> UInt64 {
        // Hashed once, outside the lock: a new name is looked for and then added.
        let hash = node.hashValue
        return table.withLock { t in
            guard let ino = t.number(node, hash: hash) else { return t.add(node, hash: hash) }
            let i = t.slot(ino)!
            t.slots[i].lookups += 1
            t.slots[i].used = true
            return ino
        }
    }

    /// The inode already assigned to `node`, without counting a lookup.
    func existing(_ node: Node) -> UInt64? { table.withLock { $0.number(node) } }

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
    /// name had is detached (it was replaced).
    func rename(_ old: Node, to new: Node) {
        table.withLock { $0.move(old, to: new) }
    }

    /// Renames a service directory and every item under it.
    func renameService(_ old: Directory, to new: [UInt8]) {
        let affected = table.withLock { t in t.slots.compactMap { $0.node?.directory == old ? $0.node : nil } }
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

    /// When more than `minimum` inodes are known: the numbers of those no request named since
    /// the last sweep. Every mark is cleared, so a name is idle from one sweep to the next.
    func idleSinceLastSweep(minimum: Int) -> [UInt64] {
        table.withLock { t in
            guard t.live > minimum else { return [] }
            var idle: [UInt64] = []
            for i in 1..<t.slots.count where !t.slots[i].isFree {
                if !t.slots[i].used { idle.append(t.number(of: i)) }
                t.slots[i].used = false
            }
            return idle
        }
    }

    /// Every number the kernel holds but the root's.
    func allButRoot() -> [UInt64] {
        table.withLock { t in (1..<t.slots.count).compactMap { t.slots[$0].isFree ? nil : t.number(of: $0) } }
    }

    /// The inodes the kernel holds of the nodes listed in `directory`.
    func children(of directory: Node) -> [UInt64] {
        table.withLock { t in
            (1..<t.slots.count).compactMap { i in t.slots[i].node?.parent == directory ? t.number(of: i) : nil }
        }
    }

    /// How many inodes the kernel holds (the root included).
    var count: Int { table.withLock { $0.live } }

    /// How many slots the array has room for: its memory.
    var slotCapacity: Int { table.withLock { $0.slots.capacity } }

    /// The directories the kernel knows (services, servers, class roots), with their inodes,
    /// for invalidation.
    func directories() -> [(UInt64, Node)] {
        table.withLock { t in
            t.slots.indices.compactMap { i in
                switch t.slots[i].node {
                case .service?, .classRoot?: return (t.number(of: i), t.slots[i].node!)
                default: return nil
                }
            }
        }
    }
}

/// The slot of each node, by the node's hash: linear probing over slot numbers, half empty at
/// most, with removed positions marked until the next rebuild.
private struct NodeIndex {
    private static let empty: Int32 = -1
    private static let removed: Int32 = -2
    private var positions = [Int32](repeating: NodeIndex.empty, count: 16)
    /// Positions not empty: live slots and removed marks.
    private var taken = 0
    private var live = 0

    func find(_ node: Node, in slots: [InodeTable.Slot]) -> Int32? { find(node, hash: node.hashValue, in: slots) }

    /// `find` with the node's `hashValue` given.
    func find(_ node: Node, hash: Int, in slots: [InodeTable.Slot]) -> Int32? {
        let mask = positions.count - 1
        var p = hash & mask
        while true {
            let slot = positions[p]
            if slot == Self.empty { return nil }
            if slot >= 0, slots[Int(slot)].node == node { return slot }
            p = (p + 1) & mask
        }
    }

    /// Adds `slot` for `node`, which the index does not hold yet.
    mutating func insert(_ slot: Int32, for node: Node, in slots: [InodeTable.Slot]) {
        insert(slot, for: node, hash: node.hashValue, in: slots)
    }

    /// `insert` with the node's `hashValue` given.
    mutating func insert(_ slot: Int32, for node: Node, hash: Int, in slots: [InodeTable.Slot]) {
        if (taken + 1) * 2 > positions.count {
            // `slots` holds `node` at `slot` already: the rebuild may have placed it.
            rebuild(from: slots)
            if find(node, hash: hash, in: slots) == slot { return }
        }
        live += 1
        let mask = positions.count - 1
        var p = hash & mask
        while positions[p] >= 0 { p = (p + 1) & mask }
        if positions[p] == Self.empty { taken += 1 }
        positions[p] = slot
    }

    /// Drops `slot`, which held `node` (the slot itself may already hold another node or none).
    /// A table left mostly empty is rebuilt smaller.
    mutating func remove(_ slot: Int32, of node: Node, in slots: [InodeTable.Slot]) {
        let mask = positions.count - 1
        var p = node.hashValue & mask
        while positions[p] != Self.empty {
            if positions[p] == slot {
                positions[p] = Self.removed
                live -= 1
                break
            }
            p = (p + 1) & mask
        }
        if positions.count > 1024, live * 16 < positions.count { rebuild(from: slots) }
    }

    /// Every live slot again, in a table at least four times their number (so it stays at most
    /// half full until the next rebuild).
    mutating func rebuild(from slots: [InodeTable.Slot]) {
        let live = slots.reduce(0) { $0 + ($1.node == nil ? 0 : 1) }
        var size = 16
        while size < live * 4 { size *= 2 }
        positions = [Int32](repeating: Self.empty, count: size)
        taken = live
        self.live = live
        let mask = size - 1
        for (i, s) in slots.enumerated() {
            guard let node = s.node else { continue }
            var p = node.hashValue & mask
            while positions[p] != Self.empty { p = (p + 1) & mask }
            positions[p] = Int32(i)
        }
    }
}
