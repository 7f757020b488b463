import KeychainfsAccess
import KeychainCore
import KeychainProtocol

/// group add, set, remove and list: the access groups and their owner/group/mode.
struct GroupRequests: RequestFamily {
    let daemon: Daemon

    func respond(_ request: Request, caller: CallerIdentity) throws -> Response {
        if request.operation == .groupList {
            let visible = daemon.state.withLock { $0.groupTable.groups }.filter { isAdministrator(caller) || $0.entitles(caller) }
            return Response(result: .array(visible.map { .item(FoundItem(attributes: Attributes(fields: $0.record), secret: nil, persistentRef: nil)) }))
        }
        // Read inside the audited change: a refused change has its failure line.
        try auditedChange(.groupsChanged, caller, "\(request.operation)") { try changeGroups(GroupRequest(decoding: request)) }
        itemsChanged()
        // Before the reply: a watcher that caches the table (the Secret Service provider) has
        // the event in its socket by the time the changer learns the change is made.
        daemon.events.publish(ChangeEvent(kind: .groups))
        log("groups changed by \(who(caller))")
        return Response()
    }

    private func changeGroups(_ request: GroupRequest) throws {
        // Read, changed and saved under the daemon.state's lock, so two changes cannot lose one.
        try daemon.groupChanges.withLock { _ in try daemon.state.withLock { s in
            var table = s.groupTable
            switch request {
            case .add(let change):
                guard table.group(named: change.name) == nil else { throw KeychainStatus.duplicateItem }
                var g = AccessGroup(name: change.name, owner: daemon.ownerUID, gid: daemon.ownerGID)
                apply(change, to: &g)
                table.groups.append(g)
            case .set(let change):
                guard let i = table.groups.firstIndex(where: { $0.name == change.name }) else { throw KeychainStatus.itemNotFound }
                apply(change, to: &table.groups[i])
            case .remove(let name):
                guard let i = table.groups.firstIndex(where: { $0.name == name }) else { throw KeychainStatus.itemNotFound }
                table.groups.remove(at: i)
            case .list:
                return
            }
            try table.save(to: vault)
            s.groupTable = table
        } }
    }

    /// The change's parts, checked when it was decoded.
    private func apply(_ change: GroupChange, to g: inout AccessGroup) {
        if let o = change.owner { g.owner = o }
        if let gid = change.gid { g.gid = gid }
        if let m = change.mode { g.mode = m }
        if let grant = change.grantsAudit { g.grantsAudit = grant }
        if let lock = change.grantsLock { g.grantsLock = lock }
        if let exe = change.executables { g.executables = exe }
    }
}
