import KeychainCore

/// Collection signals for changes made outside D-Bus (CLI, mount, `import Security`): on each
/// wake of the change feed, the vault's generic passwords are compared with the last snapshot.
/// Changes this service made itself were signalled when they were made; they are remembered as
/// echoes so the comparison does not signal them again.
struct ItemSnapshot {
    /// Every item path this process could read at the last look, with its modification date.
    var modified: [String: Double] = [:]
    /// Paths this service signalled itself since the last look, with the signal it sent.
    var echoes: [String: String] = [:]
    var taken = false
}

extension SecretService {
    /// Looks at the vault again and signals what changed since the last look.
    func compareWithVault() {
        guard let found = try? vault.search(group: nil, service: nil) else { return }
        var now: [String: Double] = [:]
        var groups: [String: String] = [:]
        for item in found {
            guard let ref = item.persistentRef, let g = item.attributes[.accessGroup]?.stringValue else { continue }
            let path = ObjectPath.item(group: g, ref: ref).string
            if case .date(let d)? = item.attributes[.modificationDate] { now[path] = d } else { now[path] = 0 }
            groups[path] = g
        }
        let before = snapshot
        snapshot = ItemSnapshot(modified: now, echoes: [:], taken: true)
        guard before.taken else { return }
        for (path, date) in now {
            if let old = before.modified[path] {
                if old != date { signal("ItemChanged", path: path, group: groups[path]!, echoes: before.echoes) }
            } else {
                signal("ItemCreated", path: path, group: groups[path]!, echoes: before.echoes)
            }
        }
        for (path, date) in before.modified where now[path] == nil {
            guard case .item(let g, let ref)? = ObjectPath(path) else { continue }
            // Not listed is not gone: while the vault is locked its WhenUnlocked items are
            // unreadable, and asking for one by reference fails rather than finding nothing.
            do {
                if try vault.item(ref: ref, group: g) != nil { snapshot.modified[path] = date; continue }
            } catch {
                snapshot.modified[path] = date
                continue
            }
            signal("ItemDeleted", path: path, group: g, echoes: before.echoes)
        }
    }

    /// Remembers a signal this service sent for its own change, so the feed does not repeat it.
    func noteEcho(_ member: String, item: String) {
        if snapshot.taken { snapshot.echoes[item] = member }
    }

    private func signal(_ member: String, path: String, group: String, echoes: [String: String]) {
        guard echoes[path] != member else { return }
        let collection = ObjectPath.collection(group: group).string
        guard let s = try? bus.signal(path: collection, interface: Self.collectionInterface, member: member),
              (try? s.objectPath(path)) != nil else { return }
        bus.send(s)
    }
}
