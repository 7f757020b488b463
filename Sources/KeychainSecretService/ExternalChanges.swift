import Glibc
import KeychainModel

/// Collection signals for changes made outside D-Bus (CLI, mount, `import Security`). Each
/// change the daemon's stream names (an add, update or delete of a service and account) is
/// looked up alone: the items of that name are read and compared with the snapshot, so filling
/// a vault costs one small search per change (a change by reference is named too: the daemon
/// names the item it changed). A change that names nothing (a new stream, a lock or unlock, a
/// change of the group table) compares every generic password with the snapshot.
/// Changes this service made itself were signalled when they were made; they are remembered as
/// echoes so the comparison does not signal them again.
struct ItemSnapshot {
    struct Entry: Equatable {
        var modified: Double
        var service: String
        var account: String
    }
    /// Every item path this process could read at the last look, with its date and name.
    private(set) var entries: [String: Entry] = [:]
    /// The paths of each service, for a change that names it.
    private(set) var byService: [String: Set<String>] = [:]
    /// Paths this service signalled itself and the signal it sent, until the stream brings them.
    var echoes: [String: String] = [:]
    var taken = false

    mutating func set(_ path: String, _ entry: Entry) {
        if let old = entries[path], old.service != entry.service { byService[old.service]?.remove(path) }
        entries[path] = entry
        byService[entry.service, default: []].insert(path)
    }

    mutating func remove(_ path: String) {
        guard let old = entries.removeValue(forKey: path) else { return }
        byService[old.service]?.remove(path)
        if byService[old.service]?.isEmpty == true { byService[old.service] = nil }
    }

    /// The paths recorded under a service, and an account when given.
    func paths(service: String, account: String?) -> [String] {
        (byService[service] ?? []).filter { account == nil || entries[$0]?.account == account }
    }
}

extension SecretService {
    /// Whether every change compares the whole vault (`KEYCHAINFS_SECRET_SERVICE_RESCAN=1`): the
    /// way outside changes were found before they were looked up one by one, kept to measure
    /// the difference (bench/secret-service.sh).
    static let rescanEveryChange = getenv("KEYCHAINFS_SECRET_SERVICE_RESCAN").map { String(cString: $0) == "1" } ?? false

    /// Applies what the change feed read since the last round.
    func applyFeed() {
        let changes: [FeedChange] = feed?.drain() ?? [.everything]
        if changes.isEmpty { return }
        if !snapshot.taken || Self.rescanEveryChange || changes.contains(.everything) {
            compareWithVault()
            return
        }
        for case .named(let service, let account) in changes { compareNamed(service: service, account: account) }
    }

    /// The path, group and snapshot entry of a listed item.
    func entry(of item: FoundItem) -> (path: String, group: String, entry: ItemSnapshot.Entry)? {
        guard let ref = item.persistentRef, let g = item.attributes[.accessGroup]?.stringValue else { return nil }
        let date: Double
        if case .date(let d)? = item.attributes[.modificationDate] { date = d } else { date = 0 }
        return (ObjectPath.item(group: g, ref: ref).string, g,
                ItemSnapshot.Entry(modified: date, service: item.attributes[.service].flatMap(SecretAttributes.text) ?? "",
                                   account: item.attributes[.account].flatMap(SecretAttributes.text) ?? ""))
    }

    /// Looks at the items of one name and signals what changed since the last look: a listed
    /// path that is new is created, one with a new `mdat` changed; a recorded path of that name
    /// no longer listed is read by reference (renamed: changed; gone: deleted; unreadable while
    /// locked: kept).
    func compareNamed(service: String, account: String?) {
        guard let found = try? vault.search(group: nil, service: service, account: account) else { return }
        var listed = Set<String>()
        for item in found {
            guard let e = entry(of: item) else { continue }
            let (path, group, new) = (e.path, e.group, e.entry)
            listed.insert(path)
            if let old = snapshot.entries[path] {
                if old.modified != new.modified { signal("ItemChanged", path: path, group: group) }
            } else {
                signal("ItemCreated", path: path, group: group)
            }
            snapshot.set(path, new)
        }
        for path in snapshot.paths(service: service, account: account) where !listed.contains(path) {
            checkUnlisted(path)
        }
    }

    /// A recorded path a look did not list: read by reference, it is renamed (changed), gone
    /// (deleted) or unreadable now (while the vault is locked: kept as it was).
    private func checkUnlisted(_ path: String) {
        guard case .item(let g, let ref)? = ObjectPath(path), let old = snapshot.entries[path] else { return }
        let item: FoundItem?
        do {
            item = try vault.item(ref: ref, group: g)
        } catch {
            return
        }
        guard let item, let now = entry(of: item)?.entry else {
            snapshot.remove(path)
            signal("ItemDeleted", path: path, group: g)
            return
        }
        if now.modified != old.modified { signal("ItemChanged", path: path, group: g) }
        snapshot.set(path, now)
    }

    /// Looks at the whole vault again and signals what changed since the last look.
    func compareWithVault() {
        vaultComparisons += 1
        guard let found = try? vault.search(group: nil, service: nil) else { return }
        var now: [String: (group: String, entry: ItemSnapshot.Entry)] = [:]
        for item in found {
            guard let e = entry(of: item) else { continue }
            now[e.path] = (e.group, e.entry)
        }
        let before = snapshot
        snapshot = ItemSnapshot()
        snapshot.echoes = before.echoes
        snapshot.taken = true
        for (path, e) in now { snapshot.set(path, e.entry) }
        if before.taken {
            for (path, e) in now {
                if let old = before.entries[path] {
                    if old.modified != e.entry.modified { signal("ItemChanged", path: path, group: e.group) }
                } else {
                    signal("ItemCreated", path: path, group: e.group)
                }
            }
            for (path, old) in before.entries where now[path] == nil {
                // Not listed is not gone: while the vault is locked its WhenUnlocked items are
                // unreadable, and asking for one by reference fails rather than finding nothing.
                snapshot.set(path, old)
                checkUnlisted(path)
            }
        }
        // Echoes not brought by the stream by now never will be.
        snapshot.echoes = [:]
    }

    /// Remembers a signal this service sent for its own change, so the feed does not repeat it,
    /// and records the change in the snapshot: a created or changed item as the vault has it now
    /// (read by reference), a deleted one gone.
    func noteEcho(_ member: String, item: String) {
        guard snapshot.taken else { return }
        snapshot.echoes[item] = member
        guard case .item(let g, let ref)? = ObjectPath(item) else { return }
        if member == "ItemDeleted" {
            snapshot.remove(item)
        } else if let found = try? vault.item(ref: ref, group: g), let e = entry(of: found) {
            snapshot.set(e.path, e.entry)
        }
    }

    /// The paths of a group's items as the snapshot has them (sorted), for a collection's
    /// `Items` after a change made over D-Bus; nil while the vault is locked (the snapshot keeps
    /// items the vault cannot read then) or before the first look.
    func snapshotItems(of group: String) -> [String]? {
        guard snapshot.taken, (try? vault.state().locked) == false else { return nil }
        let prefix = ObjectPath.collection(group: group).string + "/"
        return snapshot.entries.keys.filter { $0.hasPrefix(prefix) }.sorted()
    }

    /// Sends `member` for an outside change unless it is the echo of this service's own.
    private func signal(_ member: String, path: String, group: String) {
        if snapshot.echoes[path] == member {
            snapshot.echoes[path] = nil
            return
        }
        signal(member, interface: Self.collectionInterface, path: ObjectPath.collection(group: group).string, group: group,
               afterReply: false) { try $0.objectPath(path) }
    }
}
