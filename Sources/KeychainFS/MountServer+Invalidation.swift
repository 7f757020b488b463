import CFuse
import KeychainCore

/// Telling the kernel what it may no longer trust: after a lock, and after a change the daemon
/// saw that another mount or client made.
extension MountServer {
    /// Called after the vault locked, from a thread that serves no kernel request: wipes what
    /// open files hold of WhenUnlocked items and drops every entry the kernel knows, so the
    /// files are gone before the lock command returns.
    public func vaultDidLock() {
        locked { s in
            for file in s.files.values where file.protection.availability == .whileUnlocked { file.revoke() }
        }
        invalidateAll()
        pruneAfterLock()
    }

    /// A change another mount made: generic passwords by name, anything else (nil) as a whole.
    /// Returns at once; the kernel is told on this mount's notice queue.
    public func noticeChange(_ touched: [(service: [UInt8], account: [UInt8]?)]?) {
        notices.async { [self] in
            guard let touched else { return invalidateAll() }
            for name in touched { invalidate(service: name.service, account: name.account) }
        }
    }

    /// Drops what the kernel knows of one generic-password service (and account), and of the
    /// service's directory listing (a change the daemon saw, made elsewhere).
    public func invalidate(service: [UInt8], account: [UInt8]?) {
        invalidate(Directory(itemClass: .genericPassword, service: service), name: account.map { ItemName(service: service, account: $0) })
    }

    /// Drops what the kernel knows of one directory (and item), and of its listing.
    func invalidate(_ directory: Directory, name: ItemName?) {
        if let name { forgetEntries(of: name) } else { entries.invalidate(directory, name: nil) }
        let held = heldItems { $0 == directory }
        withSession { se in
            let dir = inodes.existing(directory.node)
            if let dir, let name {
                // Every name of the item, also those the kernel does not know: it may hold a
                // negative entry for a new item.
                for n in spellings(of: name) {
                    let ino = inodes.existing(.item(n))
                    // Names with a synchronizable value are rare: only those the kernel holds.
                    if n.synchronizable != nil && ino == nil { continue }
                    Self.invalidateEntry(se, parent: dir, name: FileNames.fileName(of: n))
                    if let ino { _ = fuse_lowlevel_notify_inval_inode(se, ino, 0, 0) }
                }
            } else if name == nil {
                for node in held { invalidateHeld(se, node) }
            }
            // Drops the directory's entry and every unused name under it (d_invalidate): a change
            // of the whole service (a rename) costs one notification, not one per account.
            if let parent = inodes.existing(Node.parent(of: directory)) {
                Self.invalidateEntry(se, parent: parent, name: directory.fileName)
            }
            if let dir { _ = fuse_lowlevel_notify_inval_inode(se, dir, 0, 0) }
        }
    }

    /// Drops the kernel's cached names, attributes and pages under the root: per directory
    /// (service, server, class root), not per item, so a lock costs what the number of
    /// directories does.
    public func invalidateAll() {
        entries.removeAll()
        locked { $0.callers.removeAll() }  // groups may have changed: entitlements are computed again
        let held = heldItems { _ in true }
        withSession { se in
            for node in held { invalidateHeld(se, node) }
            // One epoch on makes every cached name stale at once, whatever the kernel knows
            // (Linux 6.16 and later); older kernels refuse it and get one notification pair per
            // directory, whose freeing of every name under it costs what the names do.
            if locked({ $0.epochs }), kcfs_notify_increment_epoch(se) == 0 {
                _ = fuse_lowlevel_notify_inval_inode(se, InodeTable.rootIno, 0, 0)
                return
            }
            locked { $0.epochs = false }
            for (ino, node) in inodes.directories() {
                switch node {
                case .classRoot(let c):
                    if let name = FileNames.classDirectory(c) { Self.invalidateEntry(se, parent: InodeTable.rootIno, name: name) }
                case .service(let c, let s):
                    let d = Directory(itemClass: c, service: s)
                    if let parent = inodes.existing(Node.parent(of: d)) { Self.invalidateEntry(se, parent: parent, name: d.fileName) }
                default: continue
                }
                _ = fuse_lowlevel_notify_inval_inode(se, ino, 0, 0)
            }
            _ = fuse_lowlevel_notify_inval_inode(se, InodeTable.rootIno, 0, 0)
        }
    }

    /// The items of open files in the directories `matching` accepts. Invalidating a directory's
    /// entry drops only the names under it that nothing uses: an open file keeps its name and
    /// attributes cached, and a lookup of the directory (same inode) brings that name back, so
    /// these are dropped one by one.
    private func heldItems(in matching: (Directory) -> Bool) -> Set<Node> {
        locked { s in
            var held = Set<Node>()
            for file in s.files.values {
                if let d = file.node.directory, matching(d) { held.insert(file.node) }
            }
            return held
        }
    }

    /// Drops one item's name, attributes and cached pages.
    private func invalidateHeld(_ se: OpaquePointer, _ node: Node) {
        guard case .item(let n) = node, let d = node.directory, let dir = inodes.existing(d.node) else { return }
        Self.invalidateEntry(se, parent: dir, name: FileNames.fileName(of: n))
        if let ino = inodes.existing(node) { _ = fuse_lowlevel_notify_inval_inode(se, ino, 0, 0) }
    }

    /// libfuse sends the name with the NUL after it (`namelen + 1` bytes): the buffer must have one.
    static func invalidateEntry(_ se: OpaquePointer, parent: UInt64, name: [UInt8]) {
        var cName = name.map { CChar(bitPattern: $0) }
        cName.append(0)
        _ = fuse_lowlevel_notify_inval_entry(se, parent, cName, name.count)
    }
}
