import CFuse
import Dispatch
import KeychainModel
import KeychainSystem

/// Giving back what a large listing left in the kernel: `ls -l` of 100,000 names makes the kernel
/// keep 100,000 inodes, and the mount keeps an inode-table slot and a name for each as long as
/// the kernel does, which without memory pressure is for ever. Some time after such a listing
/// is closed, unless the directory was listed again, the kernel is asked to drop the names that
/// nothing uses (FUSE_NOTIFY_PRUNE); their FORGETs then free the slots.
extension MountServer {
    /// How long after a large listing is closed its names are pruned; `KEYCHAINFS_PRUNE_SECONDS`
    /// sets it (0: never).
    static let pruneDelay: Double = {
        guard let text = CurrentProcess.environment("KEYCHAINFS_PRUNE_SECONDS"), let seconds = Double(text), seconds >= 0 else { return 30 }
        return seconds
    }()

    /// Notes that a directory's large listing was opened now.
    func noteListed(_ directory: UInt64) {
        let now = monotonicSeconds()
        locked { $0.listedAt[directory] = now }
    }

    /// Schedules the prune of `items` (inode numbers of a listing of `directory` just closed).
    func schedulePrune(of items: [UInt64], in directory: UInt64) {
        guard Self.pruneDelay > 0, !items.isEmpty else { return }
        let closedAt = monotonicSeconds()
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.pruneDelay) { [self] in
            let stale = locked { s -> Bool in
                guard s.prunes, (s.listedAt[directory] ?? 0) <= closedAt else { return false }
                s.listedAt[directory] = nil
                return true
            }
            guard stale else { return }
            prune(items)
        }
    }

    /// Asks the kernel to drop the unused names and inodes of `items`, in batches.
    func prune(_ items: [UInt64]) {
        withSession { se in
            var start = 0
            while start < items.count {
                let end = min(items.count, start + 8192)
                let rc = items[start..<end].withUnsafeBufferPointer { kcfs_notify_prune(se, $0.baseAddress, UInt32($0.count)) }
                if rc != 0 {
                    // An older kernel: names stay until memory pressure, as before.
                    locked { $0.prunes = false }
                    return
                }
                start = end
            }
        }
    }
}
