/// One `sodium_malloc` region cut into slots of one size. Its mutable parts are touched only
/// with `SecurePool`'s lock held.
final class SecureRegion: @unchecked Sendable {
    // Unchecked: a sodium_malloc region whose mutable parts change only with SecurePool's lock held.
    let base: UnsafeMutableRawPointer
    let bytes: Int
    let sizeClass: Int
    let slotSize: Int
    private let capacity: Int
    /// Slots from here on were never handed out; no free list is built for a new region.
    private var untouched = 0
    private var freed: [UInt32] = []
    private(set) var used = 0

    init(base: UnsafeMutableRawPointer, bytes: Int, sizeClass: Int, slotSize: Int) {
        self.base = base
        self.bytes = bytes
        self.sizeClass = sizeClass
        self.slotSize = slotSize
        capacity = bytes / slotSize
    }

    var isFull: Bool { used == capacity }

    /// A free slot (zero), or nil when the region is full.
    func take() -> UnsafeMutableRawPointer? {
        let index: Int
        if let i = freed.popLast() {
            index = Int(i)
        } else if untouched < capacity {
            index = untouched
            untouched += 1
        } else {
            return nil
        }
        used += 1
        return base + index * slotSize
    }

    /// Makes a slot free again; the caller has zeroed it.
    func put(_ p: UnsafeMutableRawPointer) {
        let offset = p - base
        precondition(offset >= 0 && offset < bytes && offset % slotSize == 0, "not a slot of this region")
        freed.append(UInt32(offset / slotSize))
        used -= 1
    }
}

/// The regions of one size class.
struct SecureSizeClass {
    /// Regions with a free slot; allocation takes from the last.
    private var open: [SecureRegion] = []
    /// Bytes of all regions of this class; the next region is as large, within bounds.
    private(set) var regionBytes = 0

    /// As large as the class's regions so far, and at least four slots and `floor`, within the bounds.
    func nextRegionBytes(slotSize: Int, floor: Int) -> Int {
        let bytes = min(SecurePool.largestRegion, max(floor, 4 * slotSize, regionBytes))
        return bytes / slotSize * slotSize
    }

    /// A free slot, and whether its region was wholly free before.
    mutating func take() -> (block: SecurePool.Block, regionWasFree: Bool)? {
        guard let region = open.last else { return nil }
        let wasFree = region.used == 0
        guard let p = region.take() else { return nil }
        if region.isFull { open.removeLast() }
        return (SecurePool.Block(pointer: p, region: region), wasFree)
    }

    /// Adds a new region and takes its first slot.
    mutating func add(_ region: SecureRegion) -> SecurePool.Block {
        regionBytes += region.bytes
        open.append(region)
        return take()!.block
    }

    /// Returns a slot to its region; true when the region is now wholly free.
    mutating func giveBack(_ p: UnsafeMutableRawPointer, to region: SecureRegion) -> Bool {
        let wasFull = region.isFull
        region.put(p)
        if wasFull { open.append(region) }
        return region.used == 0
    }

    /// Forgets a wholly free region, for the caller to unmap.
    mutating func remove(_ region: SecureRegion) {
        open.remove(at: open.lastIndex { $0 === region }!)
        regionBytes -= region.bytes
    }
}

/// Everything `SecurePool` guards with its lock.
struct SecurePoolState {
    private var classes = [SecureSizeClass](repeating: SecureSizeClass(), count: SecurePool.classCount)
    var budget: Int
    /// The least bytes of a new region (`SecureBytes.smallestRegion`).
    var smallestRegion = SecurePool.smallestRegion
    private(set) var mappedBytes = 0
    private(set) var allocations = 0
    /// Bytes of wholly free regions kept mapped.
    private var spareBytes = 0

    init(budget: Int) { self.budget = budget }

    /// Counts an allocation about to be made. - Throws: `CryptoError.allocationFailed` past the
    /// budget or the allocation count.
    mutating func reserve(_ bytes: Int) throws {
        guard allocations < SecurePool.maximumAllocations, bytes <= budget - mappedBytes else {
            throw CryptoError.allocationFailed
        }
        mappedBytes += bytes
        allocations += 1
    }

    mutating func unreserve(_ bytes: Int) {
        mappedBytes -= bytes
        allocations -= 1
    }

    func nextRegionBytes(_ c: Int, slotSize: Int) -> Int {
        classes[c].nextRegionBytes(slotSize: slotSize, floor: smallestRegion)
    }

    mutating func take(_ c: Int) -> SecurePool.Block? {
        guard let (block, wasFree) = classes[c].take() else { return nil }
        if wasFree { spareBytes -= block.region!.bytes }
        return block
    }

    mutating func add(_ region: SecureRegion) -> SecurePool.Block { classes[region.sizeClass].add(region) }

    /// Returns a slot. A region left wholly free stays mapped while the spare regions of all
    /// classes stay within `maximumSpareBytes`, so use that rises and falls does not map and
    /// unmap each time; past that it is returned for the caller to unmap and `unreserve`.
    mutating func giveBack(_ p: UnsafeMutableRawPointer, to region: SecureRegion) -> SecureRegion? {
        guard classes[region.sizeClass].giveBack(p, to: region) else { return nil }
        if spareBytes + region.bytes <= SecurePool.maximumSpareBytes {
            spareBytes += region.bytes
            return nil
        }
        classes[region.sizeClass].remove(region)
        return region
    }
}
