import Glibc

/// The kernel's requests on inodes, each handed to the node its inode stands for. What holds
/// for every node is checked here: a read-only mount changes nothing, ownership comes from the
/// access group, and the PEM directories take no rename either way.
extension MountServer {
    func lookup(_ req: any FileRequest, parent: UInt64, name: [UInt8]) { node(parent).lookup(req, name: name) }

    func forget(_ ino: UInt64, _ count: UInt64) { inodes.forget(ino, count) }

    func getattr(_ req: any FileRequest, ino: UInt64) { node(ino).getattr(req) }

    func setattr(_ req: any FileRequest, ino: UInt64, attr: stat, toSet: Int32, handle: UInt64?) {
        let sizeBit: Int32 = 1 << 3, modeBit: Int32 = 1 << 0, uidBit: Int32 = 1 << 1, gidBit: Int32 = 1 << 2
        if toSet & (modeBit | uidBit | gidBit) != 0 { return req.error(EPERM) }  // ownership comes from the group
        let target = node(ino)
        if toSet & sizeBit != 0 {
            target.truncate(req, size: Int(attr.st_size), handle: handle)
        } else {
            target.getattr(req)
        }
    }

    func opendir(_ req: any FileRequest, ino: UInt64, opened: OpenInfo) { node(ino).opendir(req, opened: opened) }

    func mkdir(_ req: any FileRequest, parent: UInt64, name: [UInt8]) {
        guard !options.readOnly else { return req.error(EROFS) }
        node(parent).mkdir(req, name: name)
    }

    func rmdir(_ req: any FileRequest, parent: UInt64, name: [UInt8]) {
        guard !options.readOnly else { return req.error(EROFS) }
        node(parent).rmdir(req, name: name)
    }

    func create(_ req: any FileRequest, parent: UInt64, name: [UInt8], opened: OpenInfo) {
        guard !options.readOnly else { return req.error(EROFS) }
        node(parent).create(req, name: name, opened: opened)
    }

    func unlink(_ req: any FileRequest, parent: UInt64, name: [UInt8]) {
        guard !options.readOnly else { return req.error(EROFS) }
        node(parent).unlink(req, name: name)
    }

    func rename(_ req: any FileRequest, parent: UInt64, name: [UInt8], newParent: UInt64, newName: [UInt8], flags: UInt32) {
        guard !options.readOnly else { return req.error(EROFS) }
        guard flags & ~UInt32(1) == 0 else { return req.error(EINVAL) }  // only RENAME_NOREPLACE
        let source = node(parent), target = node(newParent)
        if source is FlatClassDirectory || target is FlatClassDirectory { return req.error(EPERM) }
        source.rename(req, name: name, to: target, newName: newName, flags: flags)
    }

    func open(_ req: any FileRequest, ino: UInt64, opened: OpenInfo, approval: Approval? = nil) {
        node(ino).open(req, opened: opened, approval: approval)
    }

    // Names outside `user.` (security labels, POSIX ACLs, trusted and system attributes) are
    // not supported, so they get EOPNOTSUPP on every node, as on a file system mounted without
    // them: programs that ask every file for a label or an ACL (GNU ls -l asks both) remember
    // that for the whole mount after the first answer, where ENODATA makes them ask each file.
    func getxattr(_ req: any FileRequest, ino: UInt64, name: String, size: Int) {
        guard Self.isSupportedXattrNamespace(name) else { return req.error(EOPNOTSUPP) }
        node(ino).getxattr(req, name: name, size: size)
    }

    func listxattr(_ req: any FileRequest, ino: UInt64, size: Int) { node(ino).listxattr(req, size: size) }

    func setxattr(_ req: any FileRequest, ino: UInt64, name: String, value: [UInt8]) {
        guard Self.isSupportedXattrNamespace(name) else { return req.error(EOPNOTSUPP) }
        guard !options.readOnly else { return req.error(EROFS) }
        node(ino).setxattr(req, name: name, value: value)
    }

    func removexattr(_ req: any FileRequest, name: String) {
        guard Self.isSupportedXattrNamespace(name) else { return req.error(EOPNOTSUPP) }
        req.error(name.hasPrefix(MountServer.xattrPrefix) ? EPERM : ENODATA)
    }
}
