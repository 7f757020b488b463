import Glibc
import KeychainfsAccess
import KeychainCore

/// One item as a file: its secret (a PEM for keys and certificates) is the contents, its
/// attributes the `stat` and the extended attributes.
struct ItemFile: MountNode {
    let mount: MountServer
    let ino: UInt64
    let name: ItemName

    func getattr(_ req: any FileRequest) {
        do {
            guard let e = try mount.entry(name, groups: mount.visibleGroups) else {
                if let created = mount.pendingCreation(name) { return req.attr(mount.fileStat(ino, created), timeout: 0) }
                // Locked under an open descriptor: fstat still answers with the attributes it
                // had, so a read on it reaches `read` and gets EACCES rather than ENOENT.
                let node = Node.item(name)
                let held = mount.locked { s in s.files.values.first { f in f.node == node && f.withContentLock { f.isRevoked } }?.openedEntry }
                guard let held else { return req.error(ENOENT) }
                return req.attr(mount.fileStat(ino, held), timeout: 0)
            }
            req.attr(mount.fileStat(ino, e), timeout: mount.timeout)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func open(_ req: any FileRequest, opened: OpenInfo, approval: Approval?) {
        let writing = opened.accessMode != O_RDONLY
        if writing && mount.options.readOnly { return req.error(EROFS) }
        if writing && FileNames.isFlat(name.itemClass) { return req.error(EPERM) }  // PEM files are read-only
        do {
            let (caller, groups) = mount.caller(req, writing: writing)
            guard let e = try mount.entry(name, groups: groups, opening: true) else {
                // Visible to others but not to this caller: denied, not missing.
                guard let other = try mount.entry(name, groups: mount.visibleGroups) else { return req.error(ENOENT) }
                try? mount.policy.audit(.fileDenied, caller: caller, item: other.ref)  // denied either way
                return req.error(EACCES)
            }
            let file = OpenFile(node: .item(name), ref: e.ref, protection: e.protection, groups: groups)
            file.openedEntry = e
            if !writing || opened.flags & O_TRUNC == 0 {
                var approved = false
                if let control = e.attributes[.accessControl].flatMap(AccessControl.init), control.requiresPresence {
                    // The program may take seconds: it is asked off the kernel's workers.
                    guard let approval, approval.ref == e.ref else {
                        return mount.openAfterApproval(req, ino: ino, opened: opened, ref: e.ref, attributes: e.attributes, caller: caller)
                    }
                    // No program, denied or timed out; EIO when the decision's audit line was lost.
                    guard approval.status == .success else {
                        return req.error(approval.status == .io || approval.status == .diskFull ? EIO : EACCES)
                    }
                    approved = true
                }
                file.setSnapshot(try PEMFiles.contents(e, secret: try mount.vault.fileSecret(of: e, accessGroups: groups, approved: approved)))
            }
            if writing {
                file.budget = MountServer.writers
                file.writerUID = caller.uid
                // O_TRUNC: empty in this buffer, stored at the close, not now.
                guard try file.startWriting() else {
                    file.wipe()
                    return req.error(ENOSPC)
                }
            }
            // Recorded before the descriptor exists, so no caller holds one the log does not show:
            // an open whose line cannot be written is refused with EIO (docs/filesystem.md).
            do {
                if writing {
                    try mount.policy.audit(.fileOpenWrite, caller: caller, item: e.ref)
                } else {
                    try mount.policy.auditRepeatable(.fileOpenRead, caller: caller, item: e.ref)
                }
            } catch {
                file.wipe()
                return req.error(EIO)
            }
            req.open(mount.register(file, opened))
        } catch {
            if (error as? KeychainStatus) == .decode {
                try? mount.policy.audit(.fileDamaged, caller: mount.identity(req), detail: "-")  // refused either way
            }
            req.error(errnoFor(error))
        }
    }

    func truncate(_ req: any FileRequest, size: Int, handle: UInt64?) {
        guard !mount.options.readOnly else { return req.error(EROFS) }
        guard !FileNames.isFlat(name.itemClass) else { return req.error(EPERM) }
        guard size >= 0, size <= ItemLimits.maximumSecretLength else { return req.error(EFBIG) }
        do {
            if let handle, let file = mount.locked({ $0.files[handle] }), file.withContentLock({ file.isWriting }) {
                mount.noteWriter(file, req)
                let room = try file.withContentLock { () throws -> Bool in
                    try file.withWrite { w in
                        guard try file.reserve(size, in: &w) else { return false }
                        if size > w.length {
                            _ = w.buffer.withUnsafeMutableBytes { (($0.baseAddress! + w.length)).initializeMemory(as: UInt8.self, repeating: 0, count: size - w.length) }
                        }
                        w.length = size
                        w.dirty = true
                        w.pending = true
                        w.writes += 1
                        return true
                    } ?? true  // revoked or abandoned meanwhile: a later write says so
                }
                guard room else { return req.error(ENOSPC) }
            } else {
                let groups = mount.caller(req, writing: true).groups
                guard let e = try mount.entry(name, groups: groups) else { return req.error(EACCES) }
                let change = try mount.vault.truncateFile(e.ref, to: size, accessGroups: groups)  // one transaction
                mount.changed(.update, name, groups: change.groups)
            }
        } catch {
            return req.error(errnoFor(error))
        }
        getattr(req)
    }

    // MARK: Extended attributes

    /// The item with all its attributes: a search, since cached entries keep only a few.
    private func fullEntry() throws -> FileEntry? {
        try mount.vault.fileEntries(named: name, accessGroups: mount.visibleGroups, limit: 1).first
    }

    func getxattr(_ req: any FileRequest, name xattr: String, size: Int) {
        guard let spec = MountServer.xattrSpec(xattr) else { return req.error(ENODATA) }
        do {
            guard let e = try fullEntry(), let value = MountServer.xattrValue(e, key: spec.key) else { return req.error(ENODATA) }
            if size == 0 { return req.xattrSize(value.count) }
            guard size >= value.count else { return req.error(ERANGE) }
            req.buffer(value)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func listxattr(_ req: any FileRequest, size: Int) {
        do {
            guard let e = try fullEntry() else { return size == 0 ? req.xattrSize(0) : req.buffer([]) }
            var out: [UInt8] = []
            for spec in MountServer.xattrs where MountServer.xattrValue(e, key: spec.key) != nil {
                out += Array((MountServer.xattrPrefix + spec.name).utf8) + [0]
            }
            if size == 0 { return req.xattrSize(out.count) }
            guard size >= out.count else { return req.error(ERANGE) }
            req.buffer(out)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func setxattr(_ req: any FileRequest, name xattr: String, value: [UInt8]) {
        guard let spec = MountServer.xattrSpec(xattr) else { return req.error(ENOTSUP) }
        guard spec.writable, let key = spec.key else { return req.error(EPERM) }
        do {
            guard let e = try fullEntry() else { return req.error(ENOENT) }
            guard !FileNames.isFlat(e.itemClass) else { return req.error(EPERM) }  // PEM files are read-only
            let text = String(decoding: value, as: UTF8.self)
            var change: AttributeValue = .string(text)
            if key == .accessible {
                guard let p = ProtectionClass(name: text) else { return req.error(EINVAL) }
                change = .string(p.rawValue)
            }
            let touched = try mount.vault.update([.valuePersistentRef: .data(e.ref.bytes), .synchronizable: .synchronizableAny],
                                                 changes: [key: change], accessGroups: mount.caller(req, writing: true).groups)
            mount.changed(.update, name, groups: touched)
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }
}
