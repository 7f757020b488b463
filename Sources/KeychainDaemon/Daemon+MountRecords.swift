import Glibc
import KeychainCore
import KeychainFS
import KeychainProtocol
import Synchronization

/// Serializes rewrites of the records file (it is small: one line per mount).
private let recordsWriter = Mutex<[MountRecord]?>(nil)

/// The mounts the daemon serves, kept in a file beside its socket so that a daemon restarted
/// after a crash re-establishes them, and `status` names the ones a dead daemon left; and the
/// mounts a stop took down, which the next daemon mounts again (unless `unmount` forgot them).
extension Daemon {
    var mountRecordsPath: String { Paths.mountRecords(forVault: vaultPath) }

    func recordMount(_ record: MountRecord) {
        updateRecords { list in
            list.removeAll { $0.mountpoint == record.mountpoint }
            list.append(record)
        }
    }

    func forgetMount(_ point: String) {
        updateRecords { list in list.removeAll { $0.mountpoint == point } }
    }

    /// Before a stop (`keychainfs stop`, SIGTERM) ends every mount: each one it serves in its own
    /// mount namespace is recorded as stopped, for the next daemon to mount again. A mount made in
    /// another namespace (a container's, through a passed /dev/fuse) is not: mounted again here
    /// it would land on this namespace's directory of that name.
    func recordStoppedMounts() {
        updateRecords { list in
            for i in list.indices { list[i].stopped = MountTable.isMounted(list[i].mountpoint) }
            list.removeAll { !$0.stopped }
        }
    }

    private func updateRecords(_ change: (inout [MountRecord]) -> Void) {
        let live = Set(state.withLock { $0.mounts.filter { !$0.hasEnded }.map(\.mountpoint) })
        recordsWriter.withLock { cached in
            var list = cached ?? MountRecord.read(mountRecordsPath)
            change(&list)
            // A mount that umount(8) ended is no longer served.
            list.removeAll { !live.contains($0.mountpoint) }
            cached = list
            write(MountRecord.encode(list))
        }
    }

    /// Replaces the file in one rename, readable by the daemon's user only.
    private func write(_ text: String) {
        let tmp = mountRecordsPath + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return log("cannot record mounts at \(mountRecordsPath)") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count, rename(tmp, mountRecordsPath) == 0 else {
            unlink(tmp)
            return log("cannot record mounts at \(mountRecordsPath)")
        }
    }

    /// At start: every recorded mount still standing dead in this namespace (its daemon was
    /// killed) is unmounted lazily and mounted again, served here; every mount a stop took down
    /// is mounted again where its directory is (and nothing else is mounted there). Records of
    /// mounts that are gone (unmounted, or in a namespace this daemon does not see) are dropped,
    /// and so are those of stopped mounts that could not come back (the daemon's log says why).
    func restoreMounts() {
        let records = MountRecord.read(mountRecordsPath)
        guard !records.isEmpty else { return }
        var restored: [MountRecord] = []
        for var r in records {
            let mounted = MountTable.isMounted(r.mountpoint)
            if mounted {
                guard MountTable.isDead(r.mountpoint) else {
                    if r.stopped { log("not mounting \(r.mountpoint) again: another mount is there") }
                    continue
                }
                if geteuid() == 0 || !MountServer.fusermountUnmount(r.mountpoint) {
                    umount2(r.mountpoint, Int32(MNT_DETACH))
                }
            } else if !r.stopped {
                continue
            }
            r.stopped = false
            do {
                let server = MountServer(mountpoint: r.mountpoint, options: try MountOptions(parsing: r.options),
                                         vault: vault, policy: self)
                try server.start()
                state.withLock { $0.mounts.append(server) }
                restored.append(r)
                log("re-established the mount at \(r.mountpoint) (\(server.options.description))")
            } catch {
                log("cannot re-establish the mount at \(r.mountpoint)" + (mounted ? "" : " (is it a directory this daemon may mount on?)"))
            }
        }
        updateRecords { $0 = restored }
    }
}
