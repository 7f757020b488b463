import CSodium
import KeychainSystem

/// Guarded memory for `SecureBytes` from a bounded number of `sodium_malloc` allocations.
///
/// Each `sodium_malloc` costs a handful of system calls and three or four memory mappings (a
/// header page, two guard pages, the locked bytes). One per buffer let any caller who could make
/// the daemon hold many buffers use up `vm.max_map_count`, and the next allocation crashed it.
/// Instead a buffer takes a slot of the smallest power-of-two class, 64 B to 1 MiB, that fits,
/// carved from a region shared with other slots of that class. Each new region of a class is as
/// large as the class's regions so far (at least 256 KiB and four slots, at most 16 MiB), so a
/// class holding N bytes costs O(log N + N / 16 MiB) regions. Only buffers above 1 MiB get an
/// allocation of their own.
///
/// Regions are locked into RAM and excluded from core dumps like any `sodium_malloc` memory, and
/// a free slot is always zero: regions are zeroed when made and slots when released. What is
/// given up is the guard pages between neighbouring slots of one region.
///
/// Everything mapped counts against `budget`. Past it, past `maximumAllocations`, or when
/// `sodium_malloc` returns NULL, `allocate` throws `CryptoError.allocationFailed`.
final class SecurePool: Sendable {
    static let shared = SecurePool()

    static let smallestSlot = 64
    static let largestSlot = 1 << 20
    static let smallestRegion = 256 << 10
    static let largestRegion = 16 << 20
    /// Live `sodium_malloc` allocations, whatever the budget: at about four mappings each this
    /// stays far below the default `vm.max_map_count` (65530), leaving room for everything else.
    static let maximumAllocations = 4096
    /// Wholly free regions kept mapped, all classes together, for reuse.
    static let maximumSpareBytes = 32 << 20
    static let classCount = sizeClass(for: largestSlot)! + 1

    /// Where a buffer lives: a slot of a region, or (region nil) its own `sodium_malloc`.
    struct Block {
        let pointer: UnsafeMutableRawPointer
        let region: SecureRegion?
    }

    /// Taken twice for every guarded buffer (made, released), by every thread: a lock whose
    /// waiters sleep rather than spin (`Locked`).
    private let state: Locked<SecurePoolState>

    private init() { state = Locked(SecurePoolState(budget: SecurePool.defaultBudget())) }

    /// Bytes mapped now, regions and own allocations together.
    var mappedBytes: Int { state.withLock { $0.mappedBytes } }

    var budget: Int {
        get { state.withLock { $0.budget } }
        set { state.withLock { $0.budget = newValue } }
    }

    var smallestRegion: Int {
        get { state.withLock { $0.smallestRegion } }
        set { state.withLock { $0.smallestRegion = max(newValue, 1) } }
    }

    /// The size class for `count` bytes: slots of `smallestSlot << class` bytes; nil above the
    /// largest slot.
    static func sizeClass(for count: Int) -> Int? {
        guard count <= largestSlot else { return nil }
        guard count > smallestSlot else { return 0 }
        return (Int.bitWidth - (count - 1).leadingZeroBitCount) - smallestSlot.trailingZeroBitCount
    }

    /// `count` zeroed bytes. - Throws: `CryptoError.allocationFailed`.
    func allocate(_ count: Int) throws -> Block {
        guard let c = SecurePool.sizeClass(for: count) else { return try allocateOwn(count) }
        let slotSize = SecurePool.smallestSlot << c
        let step = try state.withLock { s throws -> Step in
            if let block = s.take(c) { return .taken(block) }
            let bytes = s.nextRegionBytes(c, slotSize: slotSize)
            try s.reserve(bytes)
            return .grow(bytes)
        }
        switch step {
        case .taken(let block): return block
        case .grow(let bytes): return try addRegion(bytes, sizeClass: c, slotSize: slotSize)
        }
    }

    /// Maps a region, outside the lock: it takes a while and other classes need not wait.
    private func addRegion(_ bytes: Int, sizeClass c: Int, slotSize: Int) throws -> Block {
        guard let base = sodium_malloc(bytes) else {
            state.withLock { $0.unreserve(bytes) }
            throw CryptoError.allocationFailed
        }
        sodium_memzero(base, bytes)  // sodium_malloc fills with 0xdb; a free slot is zero
        let region = SecureRegion(base: base, bytes: bytes, sizeClass: c, slotSize: slotSize)
        return state.withLock { $0.add(region) }
    }

    private enum Step {
        case taken(Block)
        case grow(Int)
    }

    /// Zeroes the buffer and gives its memory back.
    func release(_ block: Block, count: Int) {
        guard let region = block.region else {
            sodium_free(block.pointer)  // zeroes before unmapping
            state.withLock { $0.unreserve(SecurePool.ownBytes(count)) }
            return
        }
        sodium_memzero(block.pointer, region.slotSize)
        guard let emptied = state.withLock({ $0.giveBack(block.pointer, to: region) })
        else { return }
        sodium_free(emptied.base)
        state.withLock { $0.unreserve(emptied.bytes) }
    }

    private func allocateOwn(_ count: Int) throws -> Block {
        let bytes = SecurePool.ownBytes(count)
        try state.withLock { try $0.reserve(bytes) }
        guard let p = sodium_malloc(count) else {
            state.withLock { $0.unreserve(bytes) }
            throw CryptoError.allocationFailed
        }
        sodium_memzero(p, count)
        return Block(pointer: p, region: nil)
    }

    /// What an own allocation counts against the budget: its pages.
    private static func ownBytes(_ count: Int) -> Int {
        let page = CurrentProcess.pageSize
        return count > Int.max - page ? Int.max : (count + page - 1) / page * page
    }

    /// 1 GiB, or RLIMIT_MEMLOCK when that is finite and larger.
    private static func defaultBudget() -> Int {
        let oneGiB = 1 << 30
        guard let limit = CurrentProcess.lockedMemoryLimit else { return oneGiB }
        return max(oneGiB, limit)
    }
}
