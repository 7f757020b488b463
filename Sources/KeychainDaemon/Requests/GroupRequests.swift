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
        try auditedChange(.groupsChanged, caller, "\(request.operation)") { try changeGroups(request) }
        itemsChanged()
        log("groups changed by \(who(caller))")
        return Response()
    }

    private func changeGroups(_ request: Request) throws {
        guard case .string(let name)? = request.options[.name], SettingLimits.groupNameBytes.contains(name.utf8.count)
        else { throw KeychainStatus.param }
        // Read, changed and saved under the daemon.state's lock, so two changes cannot lose one.
        try daemon.groupChanges.withLock { _ in try daemon.state.withLock { s in
            var table = s.groupTable
            switch request.operation {
            case .groupAdd:
                guard table.group(named: name) == nil else { throw KeychainStatus.duplicateItem }
                var g = AccessGroup(name: name, owner: daemon.ownerUID, gid: daemon.ownerGID)
                try apply(request.options, to: &g)
                table.groups.append(g)
            case .groupSet:
                guard let i = table.groups.firstIndex(where: { $0.name == name }) else { throw KeychainStatus.itemNotFound }
                try apply(request.options, to: &table.groups[i])
            default:
                guard let i = table.groups.firstIndex(where: { $0.name == name }) else { throw KeychainStatus.itemNotFound }
                table.groups.remove(at: i)
            }
            try table.save(to: vault)
            s.groupTable = table
        } }
    }

    private func apply(_ options: Options, to g: inout AccessGroup) throws {
        func id(_ key: OptionKey) throws -> UInt32? {
            guard let v = options[key]?.integerValue else { return nil }
            guard SettingLimits.id.contains(v) else { throw KeychainStatus.param }
            return UInt32(v)
        }
        if let o = try id(.owner) { g.owner = o }
        if let gid = try id(.gid) { g.gid = gid }
        if let m = options[.mode]?.integerValue {
            guard SettingLimits.groupMode.contains(m) else { throw KeychainStatus.param }
            g.mode = UInt32(m)
        }
        if let grant = options[.grantsAudit]?.integerValue {
            guard grant == 0 || grant == 1 else { throw KeychainStatus.param }
            g.grantsAudit = grant == 1
        }
        if let lock = options[.grantsLock]?.integerValue {
            guard lock == 0 || lock == 1 else { throw KeychainStatus.param }
            g.grantsLock = lock == 1
        }
        if case .string(let exe)? = options[.executables] { g.executables = exe.isEmpty ? [] : exe.split(separator: "\n").map(String.init) }
    }
}
