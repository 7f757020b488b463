import CFuse
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto

/// What a mount needs from its daemon: the access groups and who is entitled to them.
public protocol MountPolicy: AnyObject, Sendable {
    func entitledGroups(_ caller: CallerIdentity) -> [String]
    /// The groups whose items the caller may change.
    func writableGroups(_ caller: CallerIdentity) -> [String]
    func group(named name: String) -> AccessGroup?
    func allGroups() -> [String]
    /// Asks the approval program about a presence-gated item; `.success` approves.
    func approvePresence(ref: PersistentRef, attributes: Attributes, caller: CallerIdentity) -> KeychainStatus
    /// Reports a change made through the mount (for watchers, `on_change` and other mounts);
    /// `previous` is the name the item had before a rename, `groups` the access groups of the
    /// items it changed (nil when unknown: only administrators then learn the names).
    /// `service` is an internet password's server when `itemClass` says so.
    func itemChanged(_ kind: ChangeKind, itemClass: ItemClass, service: [UInt8], account: [UInt8]?,
                     previous: (service: [UInt8], account: [UInt8]?)?, groups: [String]?)
    /// Records a file-interface decision in the audit log. The audit calls throw when the line
    /// could not be written; an open is then refused (EIO), a denial stands either way.
    func audit(_ event: AuditEvent, caller: CallerIdentity, detail: String) throws
    /// Records a decision about one item, named by its persistent reference.
    func audit(_ event: AuditEvent, caller: CallerIdentity, item: PersistentRef) throws
    /// Records an open that a process may repeat many times a second: its first open of the item
    /// is a line of its own, further ones in the same second are written as one counted line.
    func auditRepeatable(_ event: AuditEvent, caller: CallerIdentity, item: PersistentRef) throws
    /// Owner of the directories: the daemon's user and group.
    var directoryOwner: (uid: UInt32, gid: UInt32) { get }
}

/// A caller seen in the last second, and the groups computed for it (under the server's mutex).
final class KnownCaller {
    let identity: CallerIdentity
    let until: Double
    var readable: [String]?
    var changeable: [String]?

    init(identity: CallerIdentity, until: Double) {
        self.identity = identity
        self.until = until
    }
}

/// The file interface of one mount: `/<service>/<account>` for generic passwords. Every
/// operation resolves a node, asks the vault, and answers through `FuseRequest`.
public final class MountServer: @unchecked Sendable {
    public let mountpoint: String
    public let options: MountOptions
    let vault: Vault
    let policy: MountPolicy
    let inodes = InodeTable()
    /// The libfuse session while the loop runs. Notifications and `unmount` borrow it through
    /// `withSession`; the loop thread's teardown waits for the last borrower, so no call uses a
    /// destroyed session, and no caller ever waits on another's notification.
    private var session: OpaquePointer?
    private var borrowers = 0
    private var pendingTeardown: (() -> Void)?
    private let sessionMutex = PThreadMutex()
    private let mutex = PThreadMutex()
    private var files: [UInt64: OpenFile] = [:]
    private var directories: [UInt64: [Listed]] = [:]
    private var nextHandle: UInt64 = 1
    private var callers: [Int32: KnownCaller] = [:]
    private var started = false
    /// The guarded memory of files open for writing, shared by every mount of the daemon.
    static let writers = WriteBudget()
    /// True once the kernel side is gone (unmounted with umount, or by `unmount()`).
    public var hasEnded: Bool { sessionMutex.withLock { started && session == nil } }

    /// Runs `body` with the live session; nothing once the loop has ended.
    func withSession(_ body: (OpaquePointer) -> Void) {
        guard let se = borrowSession() else { return }
        body(se)
        returnSession()
    }

    /// Takes a share of the live session (nil once the loop has ended), for work that answers a
    /// request after its handler returned: the session outlives every share. Give it back with
    /// `returnSession`.
    func borrowSession() -> OpaquePointer? {
        sessionMutex.withLock { () -> OpaquePointer? in
            if session != nil { borrowers += 1 }
            return session
        }
    }

    func returnSession() {
        let teardown = sessionMutex.withLock { () -> (() -> Void)? in
            borrowers -= 1
            guard borrowers == 0 else { return nil }
            defer { pendingTeardown = nil }
            return pendingTeardown
        }
        teardown?()
    }

    /// Records the session the loop serves (called before the loop starts).
    func began(_ se: OpaquePointer) {
        sessionMutex.withLock {
            session = se
            started = true
        }
    }

    /// Ends the session once the loop has returned: `teardown` (unmount, destroy) runs now, or
    /// when the last notification that borrowed the session returns.
    func ended(_ teardown: @escaping (OpaquePointer) -> Void) {
        let now = sessionMutex.withLock { () -> OpaquePointer? in
            guard let se = session else { return nil }
            session = nil
            if borrowers == 0 { return se }
            pendingTeardown = { teardown(se) }
            return nil
        }
        if let now { teardown(now) }
    }
    private let mountTime = time(nil)
    /// Services made with mkdir that hold no item yet; they last until unmount.
    private var emptyServices: Set<Directory> = []
    /// Attributes of the files the kernel asked about, so an open needs no search.
    let entries = EntryCache()
    /// Opens waiting for the approval program.
    let gatedOpens = GatedOpens()
    /// The values of hashed long names.
    let longNames = LongNames()
    /// Whether the kernel takes epoch notifications (until one is refused).
    private var epochs = true

    public init(mountpoint: String, options: MountOptions, vault: Vault, policy: MountPolicy) {
        self.mountpoint = mountpoint
        self.options = options
        self.vault = vault
        self.policy = policy
    }

    func locked<R>(_ body: () throws -> R) rethrows -> R { try mutex.withLock(body) }

    /// How long the kernel may trust names and attributes. Short by default so that changes and
    /// other callers' views show quickly; locks and changes through the daemon invalidate at once.
    var timeout: Double { options.kernelCache ? 30 : 1 }

    // MARK: Views

    /// The groups this mount shows: all of the vault's, or the view's (`groups=`).
    var visibleGroups: [String] {
        let all = policy.allGroups()
        guard let view = options.groups else { return all }
        return all.filter(view.contains)
    }

    /// A view with mapped owners is for one container: its uid (or members of its gid, when the
    /// group may read) gets what the view shows. Otherwise the vault's own entitlements decide.
    func readableGroups(_ caller: CallerIdentity) -> [String] {
        if let uid = options.mapUID, caller.uid == uid || caller.uid == 0 { return visibleGroups }
        if let gid = options.mapGID, caller.groups.contains(gid) {
            return visibleGroups.filter { (policy.group(named: $0)?.mode ?? 0) & 0o040 != 0 }
        }
        let entitled = policy.entitledGroups(caller)
        return options.groups == nil ? entitled : entitled.filter(visibleGroups.contains)
    }

    /// Groups whose items the caller may change here; a view shared into a container is read-only
    /// for the container unless its groups' modes allow writing.
    func changeableGroups(_ caller: CallerIdentity) -> [String] {
        if let uid = options.mapUID, caller.uid == uid {
            return visibleGroups.filter { (policy.group(named: $0)?.mode ?? 0) & 0o200 != 0 }
        }
        let writable = policy.writableGroups(caller)
        return options.groups == nil ? writable : writable.filter(visibleGroups.contains)
    }

    // MARK: Resolving

    /// The caller of a request. Reading /proc costs more than the rest of an open, so the answer
    /// is kept for a second per (pid, uid, gid): long enough for one program's open-read-close,
    /// too short for a pid to be reused meanwhile.
    func identity(_ req: FuseRequest) -> CallerIdentity { known(req).identity }

    /// The caller and the groups it may read (or, `writing`, change) here, kept with its identity:
    /// a change of the groups drops every kept caller (`invalidateAll`).
    func caller(_ req: FuseRequest, writing: Bool) -> (identity: CallerIdentity, groups: [String]) {
        let k = known(req)
        if let kept = locked({ writing ? k.changeable : k.readable }) { return (k.identity, kept) }
        let groups = writing ? changeableGroups(k.identity) : readableGroups(k.identity)
        locked { if writing { k.changeable = groups } else { k.readable = groups } }
        return (k.identity, groups)
    }

    private func known(_ req: FuseRequest) -> KnownCaller {
        let c = req.caller
        let now = monotonicSeconds()
        if let hit = locked({ callers[c.pid] }), hit.identity.uid == c.uid, hit.identity.gid == c.gid, hit.until > now {
            return hit
        }
        let fresh = KnownCaller(identity: CallerIdentity.of(pid: c.pid, uid: c.uid, gid: c.gid), until: now + 1)
        locked {
            if callers.count > 4096 { callers.removeAll() }
            callers[c.pid] = fresh
        }
        return fresh
    }

    /// A service's or server's directory name as its value, resolving hashed long names from an
    /// index that one listing builds after each change (`LongNames`).
    func directoryValue(_ name: [UInt8], itemClass: ItemClass) throws -> [UInt8]? {
        if let v = FileNames.unescape(name, topLevel: itemClass == .genericPassword) { return v }
        return try resolveLong(name, itemClass: itemClass, in: nil).service
    }

    /// The item a file name in `directory` stands for (its hashed long name resolved likewise).
    func itemName(_ name: [UInt8], in directory: Directory) throws -> ItemName? {
        if let n = FileNames.itemName(name, service: directory.service, itemClass: directory.itemClass) { return n }
        return try resolveLong(name, itemClass: directory.itemClass, in: directory).item
    }

    private func resolveLong(_ name: [UInt8], itemClass: ItemClass, in directory: Directory?) throws -> (service: [UInt8]?, item: ItemName?) {
        let generation = entries.currentGeneration
        return try longNames.resolve(name, itemClass: itemClass, in: directory, generation: generation, state: vault.lockState) { add in
            for c in Self.classes {
                try vault.forEachFileEntry(itemClass: c, accessGroups: visibleGroups, keepRows: false) { e in
                    add(e)
                    return true
                }
            }
        }
    }

    /// The classes the mount shows: generic passwords at the top, internet passwords under
    /// `/.internet`, private keys and certificates as PEM under `/.keys` and `/.certificates`.
    static let classes: [ItemClass] = [.genericPassword, .internetPassword, .key, .certificate]

    /// The file `name` shows a caller with `groups`. A known name costs no search
    /// when the caller may see the file the whole mount shows for it.
    /// `opening`: an entry a listing kept without its sealed row is searched for again (and kept),
    /// so that this open and the next ones decrypt from the row instead of reading the store.
    func entry(_ name: ItemName, groups: [String], opening: Bool = false) throws -> FileEntry? {
        if let known = entries.entry(name), groups.contains(known.group),
           isAvailable(known.protection), !(opening && known.rowLeftOut) {
            return known
        }
        let generation = entries.currentGeneration
        let visible = visibleGroups
        let found = try vault.fileEntries(named: name, accessGroups: groups, limit: 1).first
        // Only the mount-wide answer is kept: another caller's groups might pick another item.
        if let found, groups == visible {
            entries.store(found, name: name, generation: generation)
        }
        return found
    }

    /// Whether items of `protection` can be read now (WhenUnlocked ones only while unlocked).
    func isAvailable(_ protection: ProtectionClass) -> Bool {
        protection.availability != .whileUnlocked || vault.lockState == .unlocked
    }

    /// A change made through this mount: its own names go at once, before the reply, and the
    /// daemon tells watchers and other mounts.
    func changed(_ kind: ChangeKind, _ name: ItemName, previous: ItemName? = nil, groups: Set<String>?) {
        let directory = Directory(itemClass: name.itemClass, service: name.service)
        entries.invalidate(directory, name: name)
        if let previous { entries.invalidate(Directory(itemClass: previous.itemClass, service: previous.service), name: previous) }
        policy.itemChanged(kind, itemClass: name.itemClass, service: name.service, account: name.account,
                           previous: previous.map { ($0.service, $0.account) }, groups: groups.map { $0.sorted() })
    }

    /// A change of a whole directory (a rename of a service or server).
    func changed(_ kind: ChangeKind, directory: Directory, previous: Directory, groups: Set<String>?) {
        entries.invalidate(directory, name: nil)
        entries.invalidate(previous, name: nil)
        policy.itemChanged(kind, itemClass: directory.itemClass, service: directory.service, account: nil,
                           previous: (previous.service, nil), groups: groups.map { $0.sorted() })
    }

    /// Whether a change of items in `groups` is one this mount shows (for its `on_change`). A
    /// change of unknown groups is shown only by a mount of the whole vault.
    public func shows(groups: [String]?) -> Bool {
        guard let groups else { return options.groups == nil }
        return groups.contains(where: visibleGroups.contains)
    }

    func serviceExists(_ d: Directory) throws -> Bool {
        if locked({ emptyServices.contains(d) }) { return true }
        return try !vault.fileEntries(itemClass: d.itemClass, service: d.service, accessGroups: visibleGroups, limit: 1).isEmpty
    }

    func directoryStat(_ ino: UInt64) -> stat {
        var st = stat()
        st.st_mtim.tv_sec = mountTime
        st.st_ctim.tv_sec = mountTime
        st.st_atim.tv_sec = mountTime
        st.st_ino = __ino_t(ino)
        st.st_mode = S_IFDIR | (options.readOnly ? 0o555 : 0o755)
        st.st_nlink = 2
        st.st_uid = options.mapUID ?? policy.directoryOwner.uid
        st.st_gid = options.mapGID ?? policy.directoryOwner.gid
        return st
    }

    func fileStat(_ ino: UInt64, _ e: FileEntry) -> stat { fileStat(ino, FileFacts(e)) }

    func fileStat(_ ino: UInt64, _ f: FileFacts) -> stat {
        var st = stat()
        st.st_ino = __ino_t(ino)
        let g = policy.group(named: f.group)
        let writable: UInt32 = options.readOnly || !f.writable ? 0o555 : 0o777
        st.st_mode = S_IFREG | mode_t((options.fileMode.map(UInt32.init) ?? g?.mode ?? 0o400) & writable)
        st.st_nlink = 1
        st.st_uid = options.mapUID ?? g?.owner ?? policy.directoryOwner.uid
        st.st_gid = options.mapGID ?? g?.gid ?? policy.directoryOwner.gid
        st.st_size = off_t(f.size)
        st.st_blocks = blkcnt_t((f.size + 511) / 512)
        st.st_blksize = 4096
        st.st_mtim.tv_sec = f.mtime
        st.st_ctim.tv_sec = f.ctime
        st.st_atim.tv_sec = f.mtime
        return st
    }

    // MARK: Names and attributes

    func lookup(_ req: FuseRequest, parent: UInt64, name: [UInt8]) {
        do {
            switch inodes.node(parent) {
            case .root?:
                if let c = Self.classes.first(where: { FileNames.classDirectory($0) == name }) {
                    let ino = inodes.lookedUp(.classRoot(c))
                    return req.entry(ino: ino, attr: directoryStat(ino), timeout: timeout)
                }
                try lookupDirectory(req, name: name, itemClass: .genericPassword)
            case .classRoot(let c)? where FileNames.isFlat(c):
                try lookupItem(req, name: name, in: Directory(itemClass: c, service: []))
            case .classRoot(let c)?:
                try lookupDirectory(req, name: name, itemClass: c)
            case .service(let c, let s)?:
                try lookupItem(req, name: name, in: Directory(itemClass: c, service: s))
            case .item?: req.error(ENOTDIR)
            case nil: req.error(ENOENT)
            }
        } catch {
            req.error(errnoFor(error))
        }
    }

    private func lookupItem(_ req: FuseRequest, name: [UInt8], in directory: Directory) throws {
                guard let n = try itemName(name, in: directory) else { return req.error(ENOENT) }
                guard let e = try entry(n, groups: visibleGroups) else {
                    guard let created = pendingCreation(n) else { return req.error(ENOENT) }
                    let ino = inodes.lookedUp(.item(n))
                    return req.entry(ino: ino, attr: fileStat(ino, created), timeout: 0)
                }
                let ino = inodes.lookedUp(.item(n))
                req.entry(ino: ino, attr: fileStat(ino, e), timeout: timeout)
    }

    private func lookupDirectory(_ req: FuseRequest, name: [UInt8], itemClass: ItemClass) throws {
        guard let s = try directoryValue(name, itemClass: itemClass), try serviceExists(Directory(itemClass: itemClass, service: s))
        else { return req.error(ENOENT) }
        let ino = inodes.lookedUp(.service(itemClass, s))
        req.entry(ino: ino, attr: directoryStat(ino), timeout: timeout)
    }

    func forget(_ ino: UInt64, _ count: UInt64) { inodes.forget(ino, count) }

    func getattr(_ req: FuseRequest, ino: UInt64) {
        do {
            switch inodes.node(ino) {
            case .root?, .classRoot?: req.attr(directoryStat(ino), timeout: timeout)
            case .service(let c, let s)?:
                guard try serviceExists(Directory(itemClass: c, service: s)) else { return req.error(ENOENT) }
                req.attr(directoryStat(ino), timeout: timeout)
            case .item(let n)?:
                guard let e = try entry(n, groups: visibleGroups) else {
                    if let created = pendingCreation(n) { return req.attr(fileStat(ino, created), timeout: 0) }
                    // Locked under an open descriptor: fstat still answers with the attributes it
                    // had, so a read on it reaches `read` and gets EACCES rather than ENOENT.
                    let held = locked { files.values.first { f in f.node == .item(n) && f.withContentLock { f.isRevoked } }?.openedEntry }
                    guard let held else { return req.error(ENOENT) }
                    return req.attr(fileStat(ino, held), timeout: 0)
                }
                req.attr(fileStat(ino, e), timeout: timeout)
            case nil: req.error(ENOENT)
            }
        } catch {
            req.error(errnoFor(error))
        }
    }

    // MARK: Directories

    func opendir(_ req: FuseRequest, ino: UInt64, fi: UnsafeMutablePointer<fuse_file_info>) {
        do {
            let groups = caller(req, writing: false).groups
            let node = inodes.node(ino)
            let parentIno = node.flatMap { n in n.directory.flatMap { inodes.existing(Node.parent(of: $0)) } } ?? InodeTable.rootIno
            var list: [Listed] = [.dot(".", ino: ino), .dot("..", ino: parentIno)]
            switch node {
            case .classRoot(let c)? where FileNames.isFlat(c):
                try listItems(&list, itemClass: c, service: nil, groups: groups)
            case .root?, .classRoot?:
                let c: ItemClass
                if case .classRoot(let k)? = node { c = k } else { c = .genericPassword }
                if c == .genericPassword {
                    // The other classes' directories can always be entered; they are listed when
                    // they hold something the caller may see.
                    for k in Self.classes {
                        guard let d = FileNames.classDirectory(k) else { continue }
                        let holds = try !vault.fileEntries(itemClass: k, accessGroups: groups, limit: 1).isEmpty
                            || locked({ emptyServices.contains { $0.itemClass == k } })
                        if holds { list.append(Listed(name: d, node: .classRoot(k), dotIno: 0, file: nil)) }
                    }
                }
                var seen = Set<[UInt8]>()
                try vault.forEachFileEntry(itemClass: c, accessGroups: groups, keepRows: false) { e in
                    if seen.insert(e.service).inserted {
                        let d = Directory(itemClass: c, service: e.service)
                        list.append(Listed(name: d.fileName, node: d.node, dotIno: 0, file: nil))
                    }
                    return true
                }
                for d in locked({ emptyServices }) where d.itemClass == c && seen.insert(d.service).inserted {
                    list.append(Listed(name: d.fileName, node: d.node, dotIno: 0, file: nil))
                }
            case .service(let c, let s)?:
                try listItems(&list, itemClass: c, service: s, groups: groups)
            default: return req.error(ENOTDIR)
            }
            let handle = locked { () -> UInt64 in
                defer { nextHandle += 1 }
                directories[nextHandle] = list
                return nextHandle
            }
            fi.pointee.fh = handle
            req.open(fi)
        } catch {
            req.error(errnoFor(error))
        }
    }

    /// The files of one service or server, or of a class shown flat (keys, certificates).
    private func listItems(_ list: inout [Listed], itemClass c: ItemClass, service s: [UInt8]?, groups: [String]) throws {
        var seen = Set<[UInt8]>()
        // `ls -l` stats every name it lists: READDIRPLUS answers with the listing's
        // attributes, and the entries it primes answer later lookups.
        let generation = entries.currentGeneration
        let mountWide = groups == visibleGroups
        try vault.forEachFileEntry(itemClass: c, service: s, accessGroups: groups, keepRows: false) { e in
            let n = e.name
            let fileName = FileNames.fileName(of: n)
            guard seen.insert(fileName).inserted else { return true }
            list.append(Listed(name: fileName, node: .item(n), dotIno: 0, file: FileFacts(e)))
            if mountWide { entries.store(e, name: n, generation: generation, evicting: false) }
            return true
        }
    }

    /// READDIR, or with `plus` READDIRPLUS: each name with its inode and attributes, which the
    /// kernel then keeps as if it had looked the name up (so each one counts as a lookup).
    func readdir(_ req: FuseRequest, size: Int, offset: Int, fi: UnsafeMutablePointer<fuse_file_info>, plus: Bool = false) {
        guard let list = locked({ directories[fi.pointee.fh] }) else { return req.error(EBADF) }
        req.directory(offset: offset, size: size, plus: plus, entry: { index in
            guard index < list.count else { return nil }
            let listed = list[index]
            var e = fuse_entry_param()
            guard let node = listed.node else {
                // The kernel takes no lookup of "." or "..".
                e.ino = listed.dotIno
                e.attr = directoryStat(listed.dotIno)
                return (listed.name, e)
            }
            if plus {
                e.ino = inodes.lookedUp(node)
                e.attr_timeout = timeout
                e.entry_timeout = timeout
                e.attr = listed.file.map { fileStat(e.ino, $0) } ?? directoryStat(e.ino)
            } else {
                // Only the inode and the type go out. A name the kernel has not looked up carries
                // a placeholder inode; ls ignores it.
                e.ino = inodes.existing(node) ?? UInt64.max
                e.attr.st_ino = __ino_t(e.ino)
                e.attr.st_mode = listed.file == nil ? S_IFDIR : S_IFREG
            }
            return (listed.name, e)
        }, left: { index, e in
            // Counted above but not sent: the kernel never saw it.
            if plus, list[index].node != nil { inodes.forget(e.ino, 1) }
        })
    }

    func releasedir(_ req: FuseRequest, fi: UnsafeMutablePointer<fuse_file_info>) {
        locked { directories[fi.pointee.fh] = nil }
        req.ok()
    }

    func mkdir(_ req: FuseRequest, parent: UInt64, name: [UInt8]) {
        guard !options.readOnly else { return req.error(EROFS) }
        let c: ItemClass
        switch inodes.node(parent) {
        case .root?:
            if Self.classes.contains(where: { FileNames.classDirectory($0) == name }) { return req.error(EEXIST) }
            c = .genericPassword
        case .classRoot(let k)? where !FileNames.isFlat(k): c = k
        default: return req.error(EPERM)
        }
        guard let s = FileNames.unescape(name, topLevel: c == .genericPassword) else { return req.error(EINVAL) }
        let d = Directory(itemClass: c, service: s)
        do {
            guard try !serviceExists(d) else { return req.error(EEXIST) }
            locked { _ = emptyServices.insert(d) }
            let ino = inodes.lookedUp(d.node)
            req.entry(ino: ino, attr: directoryStat(ino), timeout: timeout)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func rmdir(_ req: FuseRequest, parent: UInt64, name: [UInt8]) {
        guard !options.readOnly else { return req.error(EROFS) }
        let c: ItemClass
        switch inodes.node(parent) {
        case .root?:
            if Self.classes.contains(where: { FileNames.classDirectory($0) == name }) { return req.error(EPERM) }  // always there
            c = .genericPassword
        case .classRoot(let k)? where FileNames.isFlat(k): return req.error(ENOTDIR)  // holds only files
        case .classRoot(let k)?: c = k
        default: return req.error(ENOENT)
        }
        guard let s = FileNames.unescape(name, topLevel: c == .genericPassword) else { return req.error(ENOENT) }
        do {
            if try !vault.fileEntries(itemClass: c, service: s, accessGroups: visibleGroups, limit: 1).isEmpty { return req.error(ENOTEMPTY) }
            guard locked({ emptyServices.remove(Directory(itemClass: c, service: s)) }) != nil else { return req.error(ENOENT) }
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }

    // MARK: Files

    /// `approval`: the approval program's answer for a gated item, when this is the second
    /// half of a gated open (`openAfterApproval`).
    func open(_ req: FuseRequest, ino: UInt64, fi: UnsafeMutablePointer<fuse_file_info>,
              approval: (ref: PersistentRef, status: KeychainStatus)? = nil) {
        guard case .item(let n)? = inodes.node(ino) else { return req.error(EISDIR) }
        let writing = fi.pointee.accessMode != O_RDONLY
        if writing && options.readOnly { return req.error(EROFS) }
        if writing && FileNames.isFlat(n.itemClass) { return req.error(EPERM) }  // PEM files are read-only
        do {
            let (caller, groups) = self.caller(req, writing: writing)
            guard let e = try entry(n, groups: groups, opening: true) else {
                // Visible to others but not to this caller: denied, not missing.
                guard let other = try entry(n, groups: visibleGroups) else { return req.error(ENOENT) }
                try? policy.audit(.fileDenied, caller: caller, item: other.ref)  // denied either way
                return req.error(EACCES)
            }
            let file = OpenFile(node: .item(n), ref: e.ref, protection: e.protection, groups: groups)
            file.openedEntry = e
            if !writing || fi.pointee.flags & O_TRUNC == 0 {
                var approved = false
                if let control = e.attributes[.accessControl].flatMap(AccessControl.init), control.requiresPresence {
                    // The program may take seconds: it is asked off the kernel's workers.
                    guard let approval, approval.ref == e.ref else {
                        return openAfterApproval(req, ino: ino, fi: fi, ref: e.ref, attributes: e.attributes, caller: caller)
                    }
                    // No program, denied or timed out; EIO when the decision's audit line was lost.
                    guard approval.status == .success else {
                        return req.error(approval.status == .io || approval.status == .diskFull ? EIO : EACCES)
                    }
                    approved = true
                }
                file.setSnapshot(try PEMFiles.contents(e, secret: try vault.fileSecret(of: e, accessGroups: groups, approved: approved)))
            }
            if writing {
                file.budget = Self.writers
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
                    try policy.audit(.fileOpenWrite, caller: caller, item: e.ref)
                } else {
                    try policy.auditRepeatable(.fileOpenRead, caller: caller, item: e.ref)
                }
            } catch {
                file.wipe()
                return req.error(EIO)
            }
            register(file, fi)
            req.open(fi)
        } catch {
            if (error as? KeychainStatus) == .decode {
                try? policy.audit(.fileDamaged, caller: identity(req), detail: "-")  // refused either way
            }
            req.error(errnoFor(error))
        }
    }


    private func register(_ file: OpenFile, _ fi: UnsafeMutablePointer<fuse_file_info>) {
        fi.pointee.fh = locked { () -> UInt64 in
            defer { nextHandle += 1 }
            files[nextHandle] = file
            return nextHandle
        }
        fi.pointee.direct_io = options.kernelCache ? 0 : 1
        fi.pointee.keep_cache = options.kernelCache ? 1 : 0
        // A read-only descriptor has nothing to store at close: spare the kernel the FLUSH trip.
        if !file.isWriting { fi.pointee.noflush = 1 }
    }

    func create(_ req: FuseRequest, parent: UInt64, name: [UInt8], fi: UnsafeMutablePointer<fuse_file_info>) {
        guard !options.readOnly else { return req.error(EROFS) }
        guard case .service(let c, let s)? = inodes.node(parent) else { return req.error(EPERM) }
        guard let n = FileNames.itemName(name, service: s, itemClass: c) else { return req.error(EINVAL) }
        let (who, groups) = caller(req, writing: true)
        guard !groups.isEmpty else { return req.error(EACCES) }  // a new item lands in the first
        do {
            if let existing = try entry(n, groups: visibleGroups) {
                // O_CREAT on an existing file without O_EXCL: an ordinary truncating open.
                if fi.pointee.flags & O_EXCL != 0 { return req.error(EEXIST) }
                guard groups.contains(existing.group) else { return req.error(EACCES) }
                let file = OpenFile(node: .item(n), ref: existing.ref, protection: existing.protection, groups: groups)
                file.budget = Self.writers
                file.writerUID = who.uid
                guard try file.startWriting() else { return req.error(ENOSPC) }
                register(file, fi)
                let ino = inodes.lookedUp(.item(n))
                return req.create(ino: ino, attr: fileStat(ino, existing), timeout: timeout, fi: fi)
            }
            if fi.pointee.flags & O_EXCL != 0, pendingCreation(n) != nil { return req.error(EEXIST) }
            // Nothing is stored before the first commit, which makes the item with its contents
            // in one transaction: a writer killed first leaves no item. Until then `stat` of the
            // name answers from this file (`pendingCreation`).
            let file = OpenFile(node: .item(n), ref: nil, protection: .default, groups: groups)
            file.budget = Self.writers
            file.writerUID = who.uid
            file.createdAt = time(nil)
            guard try file.startWriting() else { return req.error(ENOSPC) }
            register(file, fi)
            let ino = inodes.lookedUp(.item(n))
            req.create(ino: ino, attr: fileStat(ino, pendingFacts(file)), timeout: 0, fi: fi)
        } catch {
            req.error(errnoFor(error))
        }
    }

    /// A file created on this mount whose contents are not stored yet, as `stat` shows it.
    func pendingCreation(_ name: ItemName) -> FileFacts? {
        let node = Node.item(name)
        return locked { files.values.first { $0.ref == nil && $0.node == node } }.map(pendingFacts)
    }

    private func pendingFacts(_ file: OpenFile) -> FileFacts {
        FileFacts(group: file.groups.first ?? "", size: file.withContentLock { file.writtenLength }, time: file.createdAt)
    }

    func read(_ req: FuseRequest, size: Int, offset: Int, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let file = locked({ files[fi.pointee.fh] }) else { return req.error(EBADF) }
        func answer(_ bytes: UnsafeRawBufferPointer) {
            guard offset < bytes.count else { return req.buffer(UnsafeRawBufferPointer(start: nil, count: 0)) }
            let end = min(bytes.count, offset + size)
            req.buffer(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
        }
        // A read-only descriptor answers from its snapshot with no lock held through the reply
        // (its close may arrive while the reply is being written); the reference kept here
        // defers a lock's wipe of the snapshot until the reply is out. A written file's bytes
        // change under writes, so its reads answer under the file's lock.
        let snapshot = file.withContentLock { () -> SecureBytes?? in
            // A descriptor opened before a lock reads nothing after it.
            if file.isRevoked || (file.protection.availability == .whileUnlocked && vault.lockState != .unlocked) {
                req.error(EACCES)
                return nil
            }
            switch file.contents {
            case .reading(let snapshot): return .some(snapshot)
            case .writing:
                file.withContents(answer)
                return nil
            case .revoked, .abandoned, .closed: return .some(nil)
            }
        }
        guard let snapshot else { return }
        if let snapshot { snapshot.withUnsafeBytes(answer) } else { answer(UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    func write(_ req: FuseRequest, data: UnsafeRawBufferPointer, offset: Int, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let file = locked({ files[fi.pointee.fh] }) else { return req.error(EBADF) }
        noteWriter(file, req)
        let refused = file.withContentLock { () -> Int32? in
            switch file.contents {
            case .revoked: return EACCES
            case .abandoned: return EIO
            case .reading, .closed: return EBADF
            case .writing: break
            }
            guard offset >= 0, data.count <= ItemLimits.maximumSecretLength - offset else { return EFBIG }
            return file.withWrite { w -> Int32? in
                do {
                    guard try file.reserve(offset + data.count, in: &w) else { return ENOSPC }
                } catch {
                    return errnoFor(error)
                }
                w.buffer.withUnsafeMutableBytes { dst in
                    if offset > w.length { (dst.baseAddress! + w.length).initializeMemory(as: UInt8.self, repeating: 0, count: offset - w.length) }
                    if data.count > 0 { (dst.baseAddress! + offset).copyMemory(from: data.baseAddress!, byteCount: data.count) }
                }
                w.length = max(w.length, offset + data.count)
                w.dirty = true
                w.pending = true
                w.writes += 1
                return nil
            } ?? EBADF
        }
        // libfuse keeps its receive buffer for the next request: no plaintext may stay in it.
        wipeMemory(UnsafeMutableRawBufferPointer(mutating: data))
        if let refused { return req.error(refused) }
        req.written(data.count)
    }

    /// Records who writes through `file`, so that their FLUSH stores it (`flush`).
    func noteWriter(_ file: OpenFile, _ req: FuseRequest) {
        let tid = req.caller.pid
        guard file.withContentLock({ file.withWrite { !$0.writerThreads.contains(tid) } }) == true else { return }
        let process = processID(ofThread: tid)
        file.withContentLock {
            _ = file.withWrite { w in
                w.writerThreads.insert(tid)
                w.writerProcesses.insert(process)
            }
        }
    }

    /// Stores a written file's bytes as the item's secret in one transaction and reports the
    /// change once. `onlyWritten` (a FLUSH): only when bytes were written through this
    /// descriptor since its last commit, so closing a dup'd descriptor, or an `O_TRUNC` open's
    /// first close before any write, stores nothing; otherwise (the RELEASE) whatever is pending.
    func commit(_ file: OpenFile, onlyWritten: Bool) throws {
        // Locked under this descriptor: the pending bytes are dropped, not stored.
        let pending = try file.withContentLock { () -> (SecureBytes, Int)? in
            if file.isRevoked { throw Denied() }
            guard case .writing(let w) = file.contents, onlyWritten ? w.dirty : w.pending else { return nil }
            return (try file.withContents { try SecureBytes(copying: $0) }, w.writes)
        }
        guard let (secret, writes) = pending else { return }
        defer { secret.wipe() }
        guard case .item(let n) = locked({ file.node }) else { return }
        let change: FileChange
        if let ref = locked({ file.ref }) {
            change = try vault.storeFileSecret(secret, in: ref, accessGroups: file.groups)
        } else {
            change = try vault.storeFileSecret(secret, named: n, accessGroups: file.groups)
            // Later writes go to this item by reference, whatever it is renamed to meanwhile.
            locked {
                file.ref = change.entry.ref
                _ = emptyServices.remove(Directory(itemClass: n.itemClass, service: n.service))
            }
        }
        file.withContentLock {
            _ = file.withWrite { w in
                guard w.writes == writes else { return }
                w.dirty = false
                w.pending = false
                w.writerThreads.removeAll()
                w.writerProcesses.removeAll()
            }
        }
        changed(change.created ? .add : .update, n, groups: change.groups)
    }

    func flush(_ req: FuseRequest, fi: UnsafeMutablePointer<fuse_file_info>) {
        guard let file = locked({ files[fi.pointee.fh] }) else { return req.error(EBADF) }
        guard file.withContentLock({ file.isWriting }) else { return req.ok() }
        let pid = req.caller.pid
        // The close that a signal's exit makes: the writer did not finish, nothing is stored.
        if diesBySignal(pid: pid) {
            file.abandon()
            return req.ok()
        }
        // Another process's close (a child closing what it inherited) leaves the bytes pending.
        guard file.withContentLock({ file.withWrite { $0.writerThreads.contains(pid) } ?? false })
                || file.withContentLock({ [p = processID(ofThread: pid)] in file.withWrite { $0.writerProcesses.contains(p) } ?? false })
        else { return req.ok() }
        do {
            try commit(file, onlyWritten: true)
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }

    func release(_ req: FuseRequest, fi: UnsafeMutablePointer<fuse_file_info>) {
        let file = locked { files.removeValue(forKey: fi.pointee.fh) }
        if let file {
            try? commit(file, onlyWritten: false)  // what no FLUSH stored (`: > file`); its error has no one to go to
            file.wipe()
        }
        req.ok()
    }

    func unlink(_ req: FuseRequest, parent: UInt64, name: [UInt8]) {
        guard !options.readOnly else { return req.error(EROFS) }
        if case .classRoot(let c)? = inodes.node(parent), FileNames.isFlat(c) { return req.error(EPERM) }
        guard case .service(let c, let s)? = inodes.node(parent) else { return req.error(ENOENT) }
        do {
            guard let n = try itemName(name, in: Directory(itemClass: c, service: s)) else { return req.error(ENOENT) }
            let groups = try vault.deleteFile(n, accessGroups: caller(req, writing: true).groups)
            changed(.delete, n, groups: groups)
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }

    func rename(_ req: FuseRequest, parent: UInt64, name: [UInt8], newParent: UInt64, newName: [UInt8], flags: UInt32) {
        guard !options.readOnly else { return req.error(EROFS) }
        guard flags & ~UInt32(1) == 0 else { return req.error(EINVAL) }  // only RENAME_NOREPLACE
        for p in [parent, newParent] {
            if case .classRoot(let c)? = inodes.node(p), FileNames.isFlat(c) { return req.error(EPERM) }
        }
        let groups = caller(req, writing: true).groups
        do {
            switch (inodes.node(parent), inodes.node(newParent)) {
            case (.root?, .root?), (.classRoot?, .classRoot?):
                let c: ItemClass
                if case .classRoot(let k)? = inodes.node(parent) { c = k } else { c = .genericPassword }
                guard inodes.node(parent) == inodes.node(newParent) else { return req.error(EXDEV) }
                if c == .genericPassword, Self.classes.contains(where: { FileNames.classDirectory($0) == name || FileNames.classDirectory($0) == newName }) {
                    return req.error(EPERM)  // the class directories stay where they are
                }
                guard let from = try directoryValue(name, itemClass: c),
                      let to = FileNames.unescape(newName, topLevel: c == .genericPassword) else { return req.error(ENOENT) }
                let source = Directory(itemClass: c, service: from), target = Directory(itemClass: c, service: to)
                if try serviceExists(target) { return req.error(flags & 1 != 0 ? EEXIST : ENOTEMPTY) }
                var moved = Set<String>()
                if locked({ emptyServices.remove(source) }) != nil {
                    locked { _ = emptyServices.insert(target) }
                } else {
                    let key = target.node.directoryAttribute
                    moved = try vault.update([.class: .string(c.rawValue), key: .data(from), .synchronizable: .synchronizableAny], changes: [key: .data(to)],
                                             accessGroups: groups)
                }
                inodes.renameService(source, to: to)
                changed(.update, directory: target, previous: source, groups: moved)
                locked {
                    for f in files.values {
                        if case .item(var n) = f.node, n.itemClass == c, n.service == from {
                            n.service = to
                            f.node = .item(n)
                        }
                    }
                }
                req.ok()
            case (.service(let c1, let s1)?, .service(let c2, let s2)?):
                guard c1 == c2 else { return req.error(EXDEV) }
                guard let n1 = try itemName(name, in: Directory(itemClass: c1, service: s1)),
                      let n2 = FileNames.itemName(newName, service: s2, itemClass: c2) else { return req.error(ENOENT) }
                guard let source = try entry(n1, groups: groups) else {
                    return try renamePending(req, from: n1, to: n2, replacing: flags & 1 == 0, groups: groups)
                }
                // One transaction: a plain move, or an editor's save (the target keeps its
                // attributes, takes the new secret, and the source goes).
                let change = try vault.renameFile(source.ref, to: n2, replacing: flags & 1 == 0,
                                                  accessGroups: groups, visibleGroups: visibleGroups)
                if let target = change.replaced {
                    // Descriptors still open on the source now write to the target.
                    locked {
                        for f in files.values where f.ref == source.ref {
                            f.ref = target
                            f.node = .item(n2)
                        }
                    }
                } else {
                    locked { _ = emptyServices.remove(Directory(itemClass: c2, service: s2)) }
                }
                changed(.update, n2, previous: n1, groups: change.groups)
                // The kernel keeps the source's inode under the new name.
                inodes.rename(.item(n1), to: .item(n2))
                locked {
                    for f in files.values where f.node == .item(n1) { f.node = .item(n2) }
                }
                req.ok()
            default:
                req.error(EXDEV)
            }
        } catch {
            req.error(errnoFor(error))
        }
    }

    /// Renames a file created on this mount that is not stored yet: nothing changes in the vault
    /// now; its writers' close stores into the target (which keeps its attributes) or makes the
    /// item under the new name (POSIX: a descriptor follows its file through a rename).
    private func renamePending(_ req: FuseRequest, from n1: ItemName, to n2: ItemName, replacing: Bool, groups: [String]) throws {
        let from = Node.item(n1), to = Node.item(n2)
        guard pendingCreation(n1) != nil else { return req.error(ENOENT) }
        let target = try entry(n2, groups: visibleGroups)
        if let target {
            guard replacing else { return req.error(EEXIST) }
            guard groups.contains(target.group) else { return req.error(EACCES) }
        }
        locked {
            for f in files.values where f.ref == nil && f.node == from {
                f.node = to
                f.ref = target?.ref
            }
        }
        entries.invalidate(Directory(itemClass: n1.itemClass, service: n1.service), name: n1)
        entries.invalidate(Directory(itemClass: n2.itemClass, service: n2.service), name: n2)
        inodes.rename(from, to: to)
        req.ok()
    }

    func setattr(_ req: FuseRequest, ino: UInt64, attr: stat, toSet: Int32, fi: UnsafeMutablePointer<fuse_file_info>?) {
        let sizeBit: Int32 = 1 << 3, modeBit: Int32 = 1 << 0, uidBit: Int32 = 1 << 1, gidBit: Int32 = 1 << 2
        if toSet & (modeBit | uidBit | gidBit) != 0 { return req.error(EPERM) }  // ownership comes from the group
        guard case .item(let n)? = inodes.node(ino) else {
            return toSet & sizeBit != 0 ? req.error(EISDIR) : getattr(req, ino: ino)
        }
        if toSet & sizeBit != 0 {
            guard !options.readOnly else { return req.error(EROFS) }
            guard !FileNames.isFlat(n.itemClass) else { return req.error(EPERM) }
            let size = Int(attr.st_size)
            guard size >= 0, size <= ItemLimits.maximumSecretLength else { return req.error(EFBIG) }
            do {
                if let fi, let file = locked({ files[fi.pointee.fh] }), file.withContentLock({ file.isWriting }) {
                    noteWriter(file, req)
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
                    let groups = caller(req, writing: true).groups
                    guard let e = try entry(n, groups: groups) else { return req.error(EACCES) }
                    let change = try vault.truncateFile(e.ref, to: size, accessGroups: groups)  // one transaction
                    changed(.update, n, groups: change.groups)
                }
            } catch {
                return req.error(errnoFor(error))
            }
        }
        getattr(req, ino: ino)
    }

    // MARK: Lock and change notification

    /// Called after the vault locked, from a thread that serves no kernel request: wipes what
    /// open files hold of WhenUnlocked items and drops every entry the kernel knows, so the
    /// files are gone before the lock command returns.
    public func vaultDidLock() {
        locked {
            for file in files.values where file.protection.availability == .whileUnlocked { file.revoke() }
        }
        invalidateAll()
    }

    /// Drops what the kernel knows of one generic-password service (and account), and of the
    /// service's directory listing (a change the daemon saw, made elsewhere).
    public func invalidate(service: [UInt8], account: [UInt8]?) {
        invalidate(Directory(itemClass: .genericPassword, service: service), name: account.map { ItemName(service: service, account: $0) })
    }

    /// Drops what the kernel knows of one directory (and item), and of its listing.
    func invalidate(_ directory: Directory, name: ItemName?) {
        entries.invalidate(directory, name: name)
        let held = heldItems { $0 == directory }
        withSession { se in
            let dir = inodes.existing(directory.node)
            if let dir, let name {
                // Also when the kernel does not know it: it may hold a negative entry for a new item.
                Self.invalidateEntry(se, parent: dir, name: FileNames.fileName(of: name))
                if let ino = inodes.existing(.item(name)) {
                    _ = fuse_lowlevel_notify_inval_inode(se, ino, 0, 0)
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
        locked { callers.removeAll() }  // groups may have changed: entitlements are computed again
        let held = heldItems { _ in true }
        withSession { se in
            for node in held { invalidateHeld(se, node) }
            // One epoch on makes every cached name stale at once, whatever the kernel knows
            // (Linux 6.16 and later); older kernels refuse it and get one notification pair per
            // directory, whose freeing of every name under it costs what the names do.
            if locked({ epochs }), kcfs_notify_increment_epoch(se) == 0 {
                _ = fuse_lowlevel_notify_inval_inode(se, InodeTable.rootIno, 0, 0)
                return
            }
            locked { epochs = false }
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
        locked {
            var held = Set<Node>()
            for file in files.values {
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

