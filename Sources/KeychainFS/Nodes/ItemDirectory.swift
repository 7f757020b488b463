import Glibc
import KeychainCore

/// A directory whose names are items: a service's (server's) directory, or a class shown flat.
protocol ItemDirectory: MountNode {
    var directory: Directory { get }
}

extension ItemDirectory {
    func lookup(_ req: any FileRequest, name: [UInt8]) {
        do {
            guard let n = try mount.itemName(name, in: directory) else { return req.error(ENOENT) }
            guard let e = try mount.entry(n, groups: mount.visibleGroups) else {
                guard let created = mount.pendingCreation(n) else { return req.error(ENOENT) }
                let ino = mount.inodes.lookedUp(.item(n))
                return req.entry(ino: ino, attr: mount.fileStat(ino, created), timeout: 0)
            }
            let ino = mount.inodes.lookedUp(.item(n))
            req.entry(ino: ino, attr: mount.fileStat(ino, e), timeout: mount.timeout)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func opendir(_ req: any FileRequest, opened: OpenInfo) {
        do {
            let groups = mount.caller(req, writing: false).groups
            let parent = mount.inodes.existing(Node.parent(of: directory)) ?? InodeTable.rootIno
            mount.openDirectory(req, ino: ino, parent: parent, names: try listItems(groups: groups), opened: opened)
        } catch {
            req.error(errnoFor(error))
        }
    }

    /// The files the caller may see, each under a name of its own. `ls -l` stats every name it lists:
    /// READDIRPLUS answers with the listing's attributes, and the entries it primes answer later
    /// lookups.
    func listItems(groups: [String]) throws -> ListedNames {
        var list = ListedNames(directory: directory)
        let generation = mount.entries.currentGeneration
        // Entries for the whole mount prime the cache, until it is full.
        var priming = groups == mount.visibleGroups
        let service = FileNames.isFlat(directory.itemClass) ? nil : directory.service
        try mount.vault.forEachFileEntry(itemClass: directory.itemClass, service: service, accessGroups: groups, keepRows: false) { e in
            var n = e.name
            // One copy of the directory's name for all its items.
            if n.service == directory.service { n.service = directory.service }
            let file = FileFacts(e)
            let plain = FileNames.fileName(of: n)
            if !list.append(Listed(name: plain, node: .item(n), dotIno: 0, file: file)) {
                // The plain name shows the first item of that name, and the name with a group
                // the first item of that group: another is listed under the name that carries
                // its group, or its group and synchronizable value when an item of the other
                // value in its group came first (no two items share all three). Keys and
                // certificates share labels freely: one listed after another of its label
                // carries its application label or serial number.
                if FileNames.isFlat(n.itemClass) {
                    let key = FileNames.flatQualifier(n.itemClass)
                    guard !n.account.isEmpty, let q = e.attributes[key]?.byteView, !q.isEmpty else { return true }
                    n.qualifiers = [key: .data(q)]
                    guard list.append(Listed(name: FileNames.fileName(of: n), node: .item(n), dotIno: 0, file: file)) else { return true }
                } else {
                    let groupTaken = list.group(ofListed: plain) == e.group
                    n.group = e.group
                    if groupTaken || !list.append(Listed(name: FileNames.fileName(of: n), node: .item(n), dotIno: 0, file: file)) {
                        n.synchronizable = e.attributes[.synchronizable]?.integerView == 1
                        guard list.append(Listed(name: FileNames.fileName(of: n), node: .item(n), dotIno: 0, file: file)) else { return true }
                    }
                }
            }
            if priming { priming = mount.entries.store(e, name: n, generation: generation, evicting: false) }
            return true
        }
        list.finish()
        return list
    }
}

/// `/.keys` and `/.certificates`: private keys and certificates as read-only PEM files.
struct FlatClassDirectory: ItemDirectory {
    let mount: MountServer
    let ino: UInt64
    let itemClass: ItemClass
    var directory: Directory { Directory(itemClass: itemClass, service: []) }

    func getattr(_ req: any FileRequest) { req.attr(mount.directoryStat(ino), timeout: mount.directoryTimeout) }
    func rmdir(_ req: any FileRequest, name: [UInt8]) { req.error(ENOTDIR) }  // holds only files
    func unlink(_ req: any FileRequest, name: [UInt8]) { req.error(EPERM) }
    func rename(_ req: any FileRequest, name: [UInt8], to target: any MountNode, newName: [UInt8], flags: UInt32) {
        req.error(EPERM)
    }
}

/// One service's directory of generic passwords, or one server's of internet passwords.
struct ServiceDirectory: ItemDirectory {
    let mount: MountServer
    let ino: UInt64
    let directory: Directory

    func getattr(_ req: any FileRequest) {
        do {
            guard try mount.serviceExists(directory) else { return req.error(ENOENT) }
            req.attr(mount.directoryStat(ino), timeout: mount.directoryTimeout)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func create(_ req: any FileRequest, name: [UInt8], opened: OpenInfo) {
        guard let n = FileNames.itemName(name, service: directory.service, itemClass: directory.itemClass) else { return req.error(EINVAL) }
        let (who, groups) = mount.caller(req, writing: true)
        guard !groups.isEmpty else { return req.error(EACCES) }  // a new item lands in the first
        do {
            if let existing = try mount.entry(n, groups: mount.visibleGroups) {
                // O_CREAT on an existing file without O_EXCL: an ordinary truncating open.
                if opened.flags & O_EXCL != 0 { return req.error(EEXIST) }
                guard groups.contains(existing.group) else { return req.error(EACCES) }
                let file = OpenFile(node: .item(n), ref: existing.ref, protection: existing.protection, groups: groups)
                file.budget = MountServer.writers
                file.writerUID = who.uid
                guard try file.startWriting() else { return req.error(ENOSPC) }
                let reply = mount.register(file, opened)
                let ino = mount.inodes.lookedUp(.item(n))
                return req.create(ino: ino, attr: mount.fileStat(ino, existing), timeout: mount.timeout, opened: reply)
            }
            if opened.flags & O_EXCL != 0, mount.pendingCreation(n) != nil { return req.error(EEXIST) }
            // Nothing is stored before the first commit, which makes the item with its contents
            // in one transaction: a writer killed first leaves no item. Until then `stat` of the
            // name answers from this file (`pendingCreation`).
            let file = OpenFile(node: .item(n), ref: nil, protection: .default, groups: groups)
            file.budget = MountServer.writers
            file.writerUID = who.uid
            file.createdAt = time(nil)
            guard try file.startWriting() else { return req.error(ENOSPC) }
            // The creator's close stores the new item even when it wrote nothing (`touch`).
            mount.noteWriter(file, req)
            let reply = mount.register(file, opened)
            let ino = mount.inodes.lookedUp(.item(n))
            req.create(ino: ino, attr: mount.fileStat(ino, mount.pendingFacts(file)), timeout: 0, opened: reply)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func unlink(_ req: any FileRequest, name: [UInt8]) {
        do {
            guard var n = try mount.itemName(name, in: directory) else { return req.error(ENOENT) }
            // A name removes the item it shows this caller, not its namesakes in other groups or
            // of the other synchronizable value.
            if n.group == nil || n.synchronizable == nil, let shown = try mount.entry(n, groups: mount.caller(req, writing: false).groups) {
                n.group = shown.group
                n.synchronizable = shown.attributes[.synchronizable]?.integerView == 1
            }
            let groups = try mount.vault.deleteFile(n, accessGroups: mount.caller(req, writing: true).groups)
            mount.changed(.delete, n, groups: groups)
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }

    func rename(_ req: any FileRequest, name: [UInt8], to target: any MountNode, newName: [UInt8], flags: UInt32) {
        guard let target = target as? ServiceDirectory, target.directory.itemClass == directory.itemClass else { return req.error(EXDEV) }
        let groups = mount.caller(req, writing: true).groups
        do {
            guard let n1 = try mount.itemName(name, in: directory),
                  let n2 = FileNames.itemName(newName, service: target.directory.service, itemClass: directory.itemClass)
            else { return req.error(ENOENT) }
            guard let source = try mount.entry(n1, groups: groups) else {
                return try renamePending(req, from: n1, to: n2, replacing: flags & 1 == 0, groups: groups)
            }
            // One transaction: a plain move, or an editor's save (the target keeps its
            // attributes, takes the new secret, and the source goes).
            let change = try mount.vault.renameFile(source.ref, to: n2, replacing: flags & 1 == 0,
                                                    accessGroups: groups, visibleGroups: mount.visibleGroups)
            if let replaced = change.replaced {
                // Descriptors still open on the source now write to the target.
                mount.locked { s in
                    for f in s.files.values where f.ref == source.ref {
                        f.ref = replaced
                        f.node = .item(n2)
                    }
                }
            } else {
                mount.locked { _ = $0.emptyServices.remove(target.directory) }
            }
            mount.changed(.update, n2, previous: n1, groups: change.groups)
            // The kernel keeps the source's inode under the new name.
            mount.inodes.rename(.item(n1), to: .item(n2))
            mount.locked { s in
                for f in s.files.values where f.node == .item(n1) { f.node = .item(n2) }
            }
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }

    /// Renames a file created on this mount that is not stored yet: nothing changes in the vault
    /// now; its writers' close stores into the target (which keeps its attributes) or makes the
    /// item under the new name (POSIX: a descriptor follows its file through a rename).
    private func renamePending(_ req: any FileRequest, from n1: ItemName, to n2: ItemName, replacing: Bool, groups: [String]) throws {
        let from = Node.item(n1), to = Node.item(n2)
        guard mount.pendingCreation(n1) != nil else { return req.error(ENOENT) }
        let target = try mount.entry(n2, groups: mount.visibleGroups)
        if let target {
            guard replacing else { return req.error(EEXIST) }
            guard groups.contains(target.group) else { return req.error(EACCES) }
        }
        mount.locked { s in
            for f in s.files.values where f.ref == nil && f.node == from {
                f.node = to
                f.ref = target?.ref
            }
        }
        mount.entries.invalidate(Directory(itemClass: n1.itemClass, service: n1.service), name: n1)
        mount.entries.invalidate(Directory(itemClass: n2.itemClass, service: n2.service), name: n2)
        mount.inodes.rename(from, to: to)
        req.ok()
    }
}
