import Glibc
import KeychainCore

/// A directory whose names are directories of items: the root (services of generic passwords)
/// and `/.internet` (servers). Both make, remove, rename and list those directories alike.
protocol ServiceParent: MountNode {
    /// The class of the items in the directories below.
    var itemClass: ItemClass { get }
}

extension ServiceParent {
    func getattr(_ req: any FileRequest) { req.attr(mount.directoryStat(ino), timeout: mount.directoryTimeout) }

    /// The directory `name` stands for, when it holds an item (or was made with mkdir).
    func lookupService(_ req: any FileRequest, name: [UInt8]) {
        do {
            guard let s = try mount.directoryValue(name, itemClass: itemClass),
                  try mount.serviceExists(Directory(itemClass: itemClass, service: s))
            else { return req.error(ENOENT) }
            let ino = mount.inodes.lookedUp(.service(itemClass, s))
            req.entry(ino: ino, attr: mount.directoryStat(ino), timeout: mount.directoryTimeout)
        } catch {
            req.error(errnoFor(error))
        }
    }

    /// The directories the caller may see something in, once each.
    func listServices(groups: [String]) throws -> [Listed] {
        var list: [Listed] = []
        var seen = Set<[UInt8]>()
        try mount.vault.forEachFileEntry(itemClass: itemClass, accessGroups: groups, keepRows: false) { e in
            if seen.insert(e.service).inserted {
                let d = Directory(itemClass: itemClass, service: e.service)
                list.append(Listed(name: d.fileName, node: d.node, dotIno: 0, file: nil))
            }
            return true
        }
        for d in mount.locked({ $0.emptyServices }) where d.itemClass == itemClass && seen.insert(d.service).inserted {
            list.append(Listed(name: d.fileName, node: d.node, dotIno: 0, file: nil))
        }
        return list
    }

    /// A directory with no item yet: it lasts until unmount, or until an item lands in it.
    func makeService(_ req: any FileRequest, name: [UInt8]) {
        guard let s = FileNames.unescape(name, topLevel: itemClass == .genericPassword) else { return req.error(EINVAL) }
        let d = Directory(itemClass: itemClass, service: s)
        do {
            guard try !mount.serviceExists(d) else { return req.error(EEXIST) }
            mount.locked { _ = $0.emptyServices.insert(d) }
            let ino = mount.inodes.lookedUp(d.node)
            req.entry(ino: ino, attr: mount.directoryStat(ino), timeout: mount.directoryTimeout)
        } catch {
            req.error(errnoFor(error))
        }
    }

    /// Only an empty directory goes: one that holds items is the items' service.
    func removeService(_ req: any FileRequest, name: [UInt8]) {
        guard let s = FileNames.unescape(name, topLevel: itemClass == .genericPassword) else { return req.error(ENOENT) }
        do {
            if try !mount.vault.fileEntries(itemClass: itemClass, service: s, accessGroups: mount.visibleGroups, limit: 1).isEmpty {
                return req.error(ENOTEMPTY)
            }
            guard mount.locked({ $0.emptyServices.remove(Directory(itemClass: itemClass, service: s)) }) != nil else { return req.error(ENOENT) }
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }

    /// Renames a service (server): every item of it the caller may change, in one transaction.
    func renameService(_ req: any FileRequest, name: [UInt8], to target: any MountNode, newName: [UInt8], flags: UInt32) {
        guard target.ino == ino else { return req.error(EXDEV) }
        let groups = mount.caller(req, writing: true).groups
        do {
            guard let from = try mount.directoryValue(name, itemClass: itemClass),
                  let to = FileNames.unescape(newName, topLevel: itemClass == .genericPassword) else { return req.error(ENOENT) }
            let source = Directory(itemClass: itemClass, service: from), destination = Directory(itemClass: itemClass, service: to)
            if try mount.serviceExists(destination) { return req.error(flags & 1 != 0 ? EEXIST : ENOTEMPTY) }
            var moved = Set<String>()
            if mount.locked({ $0.emptyServices.remove(source) }) != nil {
                mount.locked { _ = $0.emptyServices.insert(destination) }
            } else {
                let key = destination.node.directoryAttribute
                moved = try mount.vault.update([.class: .string(itemClass.rawValue), key: .data(from), .synchronizable: .synchronizableAny],
                                               changes: [key: .data(to)], accessGroups: groups)
            }
            mount.inodes.renameService(source, to: to)
            mount.changed(.update, directory: destination, previous: source, groups: moved)
            mount.locked { s in
                for f in s.files.values {
                    if case .item(var n) = f.node, n.itemClass == itemClass, n.service == from {
                        n.service = to
                        f.node = .item(n)
                    }
                }
            }
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }
}

/// `/`: the class directories, then one directory per service of generic passwords.
struct RootDirectory: ServiceParent {
    let mount: MountServer
    let ino: UInt64
    var itemClass: ItemClass { .genericPassword }

    /// The class directory `name` is, if it is one (`.internet`, `.keys`, `.certificates`).
    private func classDirectory(_ name: [UInt8]) -> ItemClass? {
        MountServer.classes.first { FileNames.classDirectory($0) == name }
    }

    func lookup(_ req: any FileRequest, name: [UInt8]) {
        if let c = classDirectory(name) {
            let ino = mount.inodes.lookedUp(.classRoot(c))
            return req.entry(ino: ino, attr: mount.directoryStat(ino), timeout: mount.directoryTimeout)
        }
        lookupService(req, name: name)
    }

    func opendir(_ req: any FileRequest, opened: OpenInfo) {
        do {
            let groups = mount.caller(req, writing: false).groups
            var list: [Listed] = []
            // The other classes' directories can always be entered; they are listed when they
            // hold something the caller may see.
            for c in MountServer.classes {
                guard let d = FileNames.classDirectory(c) else { continue }
                let holds = try !mount.vault.fileEntries(itemClass: c, accessGroups: groups, limit: 1).isEmpty
                    || mount.locked({ $0.emptyServices.contains { $0.itemClass == c } })
                if holds { list.append(Listed(name: d, node: .classRoot(c), dotIno: 0, file: nil)) }
            }
            list += try listServices(groups: groups)
            mount.openDirectory(req, ino: ino, parent: InodeTable.rootIno, names: ListedNames(list), opened: opened)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func mkdir(_ req: any FileRequest, name: [UInt8]) {
        if classDirectory(name) != nil { return req.error(EEXIST) }
        makeService(req, name: name)
    }

    func rmdir(_ req: any FileRequest, name: [UInt8]) {
        if classDirectory(name) != nil { return req.error(EPERM) }  // always there
        removeService(req, name: name)
    }

    func rename(_ req: any FileRequest, name: [UInt8], to target: any MountNode, newName: [UInt8], flags: UInt32) {
        guard target.ino == ino else { return req.error(EXDEV) }
        // The class directories stay where they are.
        if classDirectory(name) != nil || classDirectory(newName) != nil { return req.error(EPERM) }
        renameService(req, name: name, to: target, newName: newName, flags: flags)
    }
}

/// `/.internet`: one directory per server of internet passwords.
struct ServerDirectory: ServiceParent {
    let mount: MountServer
    let ino: UInt64
    let itemClass: ItemClass

    func lookup(_ req: any FileRequest, name: [UInt8]) { lookupService(req, name: name) }

    func opendir(_ req: any FileRequest, opened: OpenInfo) {
        do {
            let list = try listServices(groups: mount.caller(req, writing: false).groups)
            mount.openDirectory(req, ino: ino, parent: InodeTable.rootIno, names: ListedNames(list), opened: opened)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func mkdir(_ req: any FileRequest, name: [UInt8]) { makeService(req, name: name) }
    func rmdir(_ req: any FileRequest, name: [UInt8]) { removeService(req, name: name) }

    func rename(_ req: any FileRequest, name: [UInt8], to target: any MountNode, newName: [UInt8], flags: UInt32) {
        renameService(req, name: name, to: target, newName: newName, flags: flags)
    }
}
