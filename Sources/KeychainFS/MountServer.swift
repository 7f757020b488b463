import Dispatch
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainSystem

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
    /// `origin` is the mount that made it, which has dropped its own names already.
    func itemChanged(_ kind: ChangeKind, itemClass: ItemClass, service: [UInt8], account: [UInt8]?,
                     previous: (service: [UInt8], account: [UInt8]?)?, groups: [String]?, from origin: MountServer)
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

/// A caller seen in the last second, and the groups computed for it (under the server's lock).
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

/// What the mount keeps between requests, under one lock (`MountServer.locked`). Open files'
/// contents have locks of their own, taken after this one, never before.
struct MountState {
    var files: [UInt64: OpenFile] = [:]
    var directories: [UInt64: Listing] = [:]
    var nextHandle: UInt64 = 1
    var callers: [Int32: KnownCaller] = [:]
    /// Services made with mkdir that hold no item yet; they last until unmount.
    var emptyServices: Set<Directory> = []
    /// Whether the kernel takes epoch notifications (until one is refused).
    var epochs = true
    /// Whether the kernel takes prune notifications (until one is refused).
    var prunes = true
    /// Each large listing's directory inode and when it was last opened, so a prune scheduled
    /// at its release is dropped when the directory was listed again since.
    var listedAt: [UInt64: Double] = [:]

    /// Keeps `value` under a new handle, which the kernel names in later requests.
    mutating func handle<V>(_ value: V, in table: WritableKeyPath<MountState, [UInt64: V]>) -> UInt64 {
        defer { nextHandle += 1 }
        self[keyPath: table][nextHandle] = value
        return nextHandle
    }
}

/// The file interface of one mount: `/<service>/<account>` for generic passwords, the other
/// classes under their class directories. Each request finds the node its inode stands for
/// (`MountNode`, one type per kind), which answers through its `FileRequest`; this type holds
/// what the nodes share: the vault, the views, the caches and the open files.
public final class MountServer: Sendable {
    public let mountpoint: String
    public let options: MountOptions
    let vault: Vault
    let policy: MountPolicy
    let inodes = InodeTable()
    let state = Locked(MountState())
    /// The libfuse session while the loop runs (`MountSession.swift`).
    let session = Locked(SessionShare())
    /// The guarded memory of files open for writing, shared by every mount of the daemon.
    static let writers = WriteBudget()
    let mountTime = time(nil)
    /// Attributes of the files the kernel asked about, so an open needs no search.
    let entries = EntryCache()
    /// Opens waiting for the approval program.
    let gatedOpens = GatedOpens()
    /// The values of hashed long names.
    let longNames = LongNames()
    /// Changes made through other mounts, told to this mount's kernel in order, on a queue of its
    /// own: never from inside another mount's request, whose kernel locks a notification may wait on.
    let notices = DispatchQueue(label: "keychainfs.mount.notices")

    public init(mountpoint: String, options: MountOptions, vault: Vault, policy: MountPolicy) {
        self.mountpoint = mountpoint
        self.options = options
        self.vault = vault
        self.policy = policy
    }

    func locked<R>(_ body: (inout MountState) throws -> R) rethrows -> R { try state.withLock(body) }

    /// How long the kernel may trust names and attributes. Short by default so that changes and
    /// other callers' views show quickly; locks and changes through the daemon invalidate at once.
    var timeout: Double { options.kernelCache ? 30 : 1 }

    /// How long the kernel may trust a directory's name and attributes (a service's, a server's,
    /// a class's, the root's). Longer than a file's: a directory's attributes never change while
    /// mounted (`directoryStat`), and what makes one go is told to the kernel at once: a change
    /// made elsewhere (another mount, the CLI or API, sync, a group's change) drops its name, a
    /// lock drops every name, and this mount's own removal or move of an item makes the kernel
    /// ask for its directory's attributes again, which `ServiceDirectory.getattr` refuses once
    /// the directory is empty. The timeout is only a backstop. With 1 s, random reads over a
    /// million items in 1,000 directories asked for a directory again (its LOOKUP, or the
    /// GETATTR of the permission check on the way) in more than one read of two
    /// (bench/analysis.md, 2026-12-07).
    var directoryTimeout: Double { 30 }

    /// The classes the mount shows: generic passwords at the top, internet passwords under
    /// `/.internet`, private keys and certificates as PEM under `/.keys` and `/.certificates`.
    static let classes: [ItemClass] = [.genericPassword, .internetPassword, .key, .certificate]

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

    /// Whether a change of items in `groups` is one this mount shows (for its `on_change`). A
    /// change of unknown groups is shown only by a mount of the whole vault.
    public func shows(groups: [String]?) -> Bool {
        guard let groups else { return options.groups == nil }
        return groups.contains(where: visibleGroups.contains)
    }

    // MARK: Callers

    /// The caller of a request. Reading /proc costs more than the rest of an open, so the answer
    /// is kept for a second per (pid, uid, gid): long enough for one program's open-read-close,
    /// too short for a pid to be reused meanwhile.
    func identity(_ req: any FileRequest) -> CallerIdentity { known(req).identity }

    /// The caller and the groups it may read (or, `writing`, change) here, kept with its identity:
    /// a change of the groups drops every kept caller (`invalidateAll`).
    func caller(_ req: any FileRequest, writing: Bool) -> (identity: CallerIdentity, groups: [String]) {
        let k = known(req)
        if let kept = locked({ _ in writing ? k.changeable : k.readable }) { return (k.identity, kept) }
        let groups = writing ? changeableGroups(k.identity) : readableGroups(k.identity)
        locked { _ in if writing { k.changeable = groups } else { k.readable = groups } }
        return (k.identity, groups)
    }

    private func known(_ req: any FileRequest) -> KnownCaller {
        let c = req.caller
        let now = monotonicSeconds()
        if let hit = locked({ $0.callers[c.pid] }), hit.identity.uid == c.uid, hit.identity.gid == c.gid, hit.until > now {
            return hit
        }
        let fresh = KnownCaller(identity: CallerIdentity.of(pid: c.pid, uid: c.uid, gid: c.gid), until: now + 1)
        locked { s in
            if s.callers.count > 4096 { s.callers.removeAll() }
            s.callers[c.pid] = fresh
        }
        return fresh
    }

    // MARK: Names and entries

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
        // Opened with only the attributes the cache keeps, whether it keeps this one or not:
        // a known name's entry has no others either.
        let found = try vault.fileEntries(named: name, accessGroups: groups, limit: 1, attributes: EntryCache.openedAttributes).first
        // Only the mount-wide answer is kept: another caller's groups might pick another item.
        if let found, groups == visible {
            entries.store(found, name: name, generation: generation, opened: true)
        }
        return found
    }

    /// Whether items of `protection` can be read now (WhenUnlocked ones only while unlocked).
    func isAvailable(_ protection: ProtectionClass) -> Bool {
        protection.availability != .whileUnlocked || vault.lockState == .unlocked
    }

    /// Whether directory `d` shows something to the whole mount, or was made with mkdir. A
    /// directory an item showed is known without a search while that item's group is shown
    /// and its class available, until anything in the directory changes (`EntryCache`).
    func serviceExists(_ d: Directory) throws -> Bool {
        if locked({ $0.emptyServices.contains(d) }) { return true }
        let visible = visibleGroups
        if let known = entries.witness(d), visible.contains(known.group), isAvailable(known.protection) { return true }
        let generation = entries.currentGeneration
        guard let found = try vault.firstFileItem(itemClass: d.itemClass, service: d.service, accessGroups: visible) else { return false }
        entries.store(EntryCache.DirectoryWitness(group: found.group, protection: found.protection), directory: d, generation: generation)
        return true
    }

    /// A file created on this mount whose contents are not stored yet, as `stat` shows it.
    func pendingCreation(_ name: ItemName) -> FileFacts? {
        let node = Node.item(name)
        return locked { $0.files.values.first { $0.ref == nil && $0.node == node } }.map(pendingFacts)
    }

    func pendingFacts(_ file: OpenFile) -> FileFacts {
        FileFacts(group: file.groups.first ?? "", size: file.withContentLock { file.writtenLength }, time: file.createdAt)
    }

    // MARK: Attributes

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

    // MARK: Changes made here

    /// A change made through this mount: its own names go at once, before the reply, and the
    /// daemon tells watchers and other mounts.
    func changed(_ kind: ChangeKind, _ name: ItemName, previous: ItemName? = nil, groups: Set<String>?) {
        forgetEntries(of: name)
        if let previous { forgetEntries(of: previous) }
        policy.itemChanged(kind, itemClass: name.itemClass, service: name.service, account: name.account,
                           previous: previous.map { ($0.service, $0.account) }, groups: groups.map { $0.sorted() }, from: self)
    }

    /// Drops the kept entries of every name of an item: its plain name and the ones with a group.
    func forgetEntries(of name: ItemName) {
        let directory = Directory(itemClass: name.itemClass, service: name.service)
        for n in spellings(of: name) { entries.invalidate(directory, name: n) }
    }

    /// The names an item may be known by here: the plain one, and one per group it could be
    /// in, each also with either synchronizable value.
    func spellings(of name: ItemName) -> [ItemName] {
        guard !FileNames.isFlat(name.itemClass) else { return [name] }
        var out: [ItemName] = []
        for group in [nil] + policy.allGroups().map(Optional.some) {
            for synchronizable in [nil, false, true] as [Bool?] {
                var n = name.plain
                n.group = group
                n.synchronizable = synchronizable
                out.append(n)
            }
        }
        return out
    }

    /// A change of a whole directory (a rename of a service or server).
    func changed(_ kind: ChangeKind, directory: Directory, previous: Directory, groups: Set<String>?) {
        entries.invalidate(directory, name: nil)
        entries.invalidate(previous, name: nil)
        policy.itemChanged(kind, itemClass: directory.itemClass, service: directory.service, account: nil,
                           previous: (previous.service, nil), groups: groups.map { $0.sorted() }, from: self)
    }
}
