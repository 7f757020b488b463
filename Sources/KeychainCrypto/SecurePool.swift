import CSodium
import Glibc

/// Small guarded buffers carved from large `sodium_malloc` regions.
///
/// `sodium_malloc` costs a handful of system calls and about three memory mappings per buffer,
/// which dominates per-item work and caps the number of live buffers at `vm.max_map_count`.
/// Keys, item keys and short secrets come from here instead: the regions are still locked into
/// RAM and excluded from core dumps, and every slot is zeroed when released. Only the guard
/// pages between neighbouring slots are given up; larger buffers still get their own.
final class SecurePool: @unchecked Sendable {
    static let shared = SecurePool()

    /// Slot sizes; a request takes the smallest that fits.
    static let slotSizes = [64, 512]
    private static let regionSize = 256 * 1024

    private var mutex = pthread_mutex_t()
    private var free: [[UnsafeMutableRawPointer]] = Array(repeating: [], count: slotSizes.count)

    private init() { pthread_mutex_init(&mutex, nil) }

    /// The slot class for `count` bytes, or nil when the buffer should be allocated on its own.
    static func slotClass(for count: Int) -> Int? {
        slotSizes.firstIndex { count <= $0 }
    }

    func allocate(slotClass c: Int) -> UnsafeMutableRawPointer {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        if free[c].isEmpty { grow(c) }
        return free[c].removeLast()
    }

    /// Zeroes the slot and makes it available again.
    func release(_ p: UnsafeMutableRawPointer, slotClass c: Int) {
        sodium_memzero(p, SecurePool.slotSizes[c])
        pthread_mutex_lock(&mutex)
        free[c].append(p)
        pthread_mutex_unlock(&mutex)
    }

    private func grow(_ c: Int) {
        guard let region = sodium_malloc(SecurePool.regionSize) else {
            fatalError("sodium_malloc failed: out of memory or memory mappings (vm.max_map_count)")
        }
        sodium_memzero(region, SecurePool.regionSize)
        let size = SecurePool.slotSizes[c]
        for offset in stride(from: 0, to: SecurePool.regionSize - size + 1, by: size) {
            free[c].append(region + offset)
        }
    }
}
