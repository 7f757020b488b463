import Dispatch
import Glibc
import KeychainCore
import KeychainSystem

/// The approval program's answer for a gated item, when an open is the second half of a gated
/// open (`openAfterApproval`).
typealias Approval = (ref: PersistentRef, status: KeychainStatus)

/// What one kind of node serves. Each kind implements the operations it has; the defaults
/// answer the rest as a file system does for that kind of node (a directory cannot be opened
/// as a file, a file holds no names). Requests on open handles (read, write, readdir...) go to
/// the handle, not the node (`OpenHandles.swift`).
protocol MountNode {
    var mount: MountServer { get }
    var ino: UInt64 { get }

    func getattr(_ req: any FileRequest)
    func lookup(_ req: any FileRequest, name: [UInt8])
    func opendir(_ req: any FileRequest, opened: OpenInfo)
    func mkdir(_ req: any FileRequest, name: [UInt8])
    func rmdir(_ req: any FileRequest, name: [UInt8])
    func create(_ req: any FileRequest, name: [UInt8], opened: OpenInfo)
    func unlink(_ req: any FileRequest, name: [UInt8])
    /// Moves `name` here to `newName` in `target`; the source's parent decides.
    func rename(_ req: any FileRequest, name: [UInt8], to target: any MountNode, newName: [UInt8], flags: UInt32)
    func open(_ req: any FileRequest, opened: OpenInfo, approval: Approval?)
    /// SETATTR with a size; `handle` is the open file it came through, if any.
    func truncate(_ req: any FileRequest, size: Int, handle: UInt64?)
    func getxattr(_ req: any FileRequest, name: String, size: Int)
    func listxattr(_ req: any FileRequest, size: Int)
    func setxattr(_ req: any FileRequest, name: String, value: [UInt8])
}

extension MountNode {
    func lookup(_ req: any FileRequest, name: [UInt8]) { req.error(ENOTDIR) }
    func opendir(_ req: any FileRequest, opened: OpenInfo) { req.error(ENOTDIR) }
    func mkdir(_ req: any FileRequest, name: [UInt8]) { req.error(EPERM) }
    func rmdir(_ req: any FileRequest, name: [UInt8]) { req.error(ENOENT) }
    func create(_ req: any FileRequest, name: [UInt8], opened: OpenInfo) { req.error(EPERM) }
    func unlink(_ req: any FileRequest, name: [UInt8]) { req.error(ENOENT) }
    func rename(_ req: any FileRequest, name: [UInt8], to target: any MountNode, newName: [UInt8], flags: UInt32) { req.error(EXDEV) }
    func open(_ req: any FileRequest, opened: OpenInfo, approval: Approval?) { req.error(EISDIR) }
    func truncate(_ req: any FileRequest, size: Int, handle: UInt64?) { req.error(EISDIR) }
    // Directories carry no extended attributes.
    func getxattr(_ req: any FileRequest, name: String, size: Int) {
        req.error(ENODATA)
    }
    func listxattr(_ req: any FileRequest, size: Int) { size == 0 ? req.xattrSize(0) : req.buffer([]) }
    func setxattr(_ req: any FileRequest, name: String, value: [UInt8]) {
        req.error(MountServer.xattrSpec(name).map { $0.writable ? ENOENT : EPERM } ?? ENOTSUP)
    }
}

/// An inode the kernel names that the mount no longer knows (forgotten, or never given out).
struct MissingNode: MountNode {
    let mount: MountServer
    let ino: UInt64

    func getattr(_ req: any FileRequest) { req.error(ENOENT) }
    func lookup(_ req: any FileRequest, name: [UInt8]) { req.error(ENOENT) }
    func getxattr(_ req: any FileRequest, name: String, size: Int) {
        req.error(MountServer.xattrSpec(name) == nil ? ENODATA : ENOENT)
    }
    func listxattr(_ req: any FileRequest, size: Int) { req.error(ENOENT) }
}

extension MountServer {
    /// The node an inode stands for: the one place that tells the kinds apart.
    func node(_ ino: UInt64) -> any MountNode {
        switch inodes.node(ino) {
        case .root?: return RootDirectory(mount: self, ino: ino)
        case .classRoot(let c)? where FileNames.isFlat(c): return FlatClassDirectory(mount: self, ino: ino, itemClass: c)
        case .classRoot(let c)?: return ServerDirectory(mount: self, ino: ino, itemClass: c)
        case .service(let c, let s)?: return ServiceDirectory(mount: self, ino: ino, directory: Directory(itemClass: c, service: s))
        case .item(let n)?: return ItemFile(mount: self, ino: ino, name: n)
        case nil: return MissingNode(mount: self, ino: ino)
        }
    }

    /// Lists `names` after "." and ".." under a new directory handle and answers the open.
    func openDirectory(_ req: any FileRequest, ino: UInt64, parent: UInt64, names: ListedNames, opened: OpenInfo) {
        let list = Listing(dots: (Listed.dot(".", ino: ino), Listed.dot("..", ino: parent)), names: names)
        var reply = opened
        reply.handle = locked { $0.handle(list, in: \.directories) }
        let large = list.count > Listing.large
        if large { noteListed(ino) }
        req.open(reply)
        guard large else { return }
        // What the scan freed (the rows it decoded, its pages past the scan's bound) goes back
        // to the system now rather than at releasedir: `ls -l` keeps the listing open while it
        // stats every name.
        DispatchQueue.global(qos: .utility).async { CurrentProcess.releaseFreeHeap() }
    }
}
