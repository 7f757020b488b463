import CFuse
import Dispatch
import KeychainModel
import KeychainSystem

/// Giving back what the kernel keeps: `ls -l` of 100,000 names makes the kernel keep 100,000
/// inodes, and the mount keeps an inode-table slot and a name for each as long as the kernel
/// does, which without memory pressure is for ever. The kernel is asked to drop the names that
/// nothing uses (FUSE_NOTIFY_PRUNE), and their FORGETs then free the slots:
/// - some time after a large listing is closed, unless the directory was listed again;
/// - while more than `Listing.large` names are known, those no request named for a whole
///   sweep period (names that many small listings or lookups brought);
/// - after a lock, all of them: the kernel may trust none.
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

    /// Schedules the prune of the names in `directory`, whose large listing was just closed.
    /// Which names those are is found when the time comes (`InodeTable.children`): a list of
    /// them held until then would cost 8 bytes a name for every listing closed in that time.
    func schedulePrune(in directory: UInt64) {
        guard Self.pruneDelay > 0, let parent = inodes.node(directory) else { return }
        let closedAt = monotonicSeconds()
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.pruneDelay) { [self] in
            let stale = locked { s -> Bool in
                guard s.prunes, (s.listedAt[directory] ?? 0) <= closedAt else { return false }
                s.listedAt[directory] = nil
                return true
            }
            guard stale else { return }
            let items = inodes.children(of: parent)
            if !items.isEmpty { pruneAndRelease(items) }
        }
    }

    /// Starts the idle sweep: every `pruneDelay` seconds while the mount lives.
    func startIdleSweeps() {
        guard Self.pruneDelay > 0 else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.pruneDelay) { [weak self] in
            guard let self, !hasEnded else { return }
            let idle = inodes.idleSinceLastSweep(minimum: Listing.large)
            if !idle.isEmpty, locked({ $0.prunes }) { pruneAndRelease(idle) }
            startIdleSweeps()
        }
    }

    /// After a lock: every name the kernel holds, off the locking thread.
    func pruneAfterLock() {
        guard Self.pruneDelay > 0 else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            let known = inodes.allButRoot()
            if known.count > 0, locked({ $0.prunes }) { pruneAndRelease(known) }
        }
    }

    /// Prunes `items`; the kernel's FORGETs free their slots within moments, and then the heap's
    /// free pages go back to the system. The entry cache goes too: a listing filled it with the
    /// names now dropped, and the names still in use find their entries again with one search.
    func pruneAndRelease(_ items: [UInt64]) {
        entries.removeAll()
        prune(items)
        // The readers' page caches too (8 MiB each, filled by the lookups that brought the
        // names), then the heap.
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 2) { [vault] in
            vault.releaseCaches()
            CurrentProcess.releaseFreeHeap()
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
