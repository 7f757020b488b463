import KeychainfsAccess
import KeychainCore
import KeychainProtocol

/// group add, set, remove and list: the access groups and their owner/group/mode.
struct GroupRequests: RequestFamily {
    let context: RequestContext

    func list() -> Outcome {
        let visible = context.control.groupTable.groups.filter { groups.isAdministrator || $0.entitles(caller) }
        return .reply(ItemsReply(.array(visible.map {
            .item(FoundItem(attributes: Attributes(fields: $0.record), secret: nil, persistentRef: nil))
        })))
    }

    /// A change whose options do not decode is still audited: `groups-changed`, then its
    /// `groups-changed-failed` line.
    func change(_ request: GroupChangeRequest) throws -> Outcome {
        try auditedChange(.groupsChanged, caller, "\(request.operation)") { try changeGroups(request.parsed.get()) }
        itemsChanged()
        // Before the reply: a watcher that caches the table (the Secret Service provider) has
        // the event in its socket by the time the changer learns the change is made.
        context.changes.publish(ChangeEvent(kind: .groups))
        log("groups changed by \(who(caller))")
        return .reply(StatusReply())
    }

    private func changeGroups(_ request: GroupRequest) throws {
        let control = context.control
        try control.changeGroupTable { table in
            switch request {
            case .add(let change):
                guard table.group(named: change.name) == nil else { throw KeychainStatus.duplicateItem }
                var g = AccessGroup(name: change.name, owner: control.ownerUID, gid: control.ownerGID)
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
        }
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

/// A group change as the table's rows take it: decoded, or the status decoding gave, which the
/// change's audit line then records as its failure.
struct GroupChangeRequest: TypedRequest {
    let operation: Operation
    let parsed: Result<GroupRequest, KeychainStatus>

    init(decoding request: Request) {
        operation = request.operation
        do { parsed = .success(try GroupRequest(decoding: request)) } catch {
            parsed = .failure(error as? KeychainStatus ?? .param)
        }
    }

    var request: Request {
        switch parsed {
        case .success(let r): return r.request
        case .failure: return Request(operation)
        }
    }
}
