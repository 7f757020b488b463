import KeychainfsAccess
import KeychainCore

/// A family of request handlers (items, groups, mounts, administration): a type each, in its
/// own file, holding the daemon it serves. `Daemon.respond` checks the operation's right
/// (`OperationRule`) before a family sees the request, and maps every error a family throws.
/// The daemon's parts the families share are reached through these forwarders.
protocol RequestFamily {
    var daemon: Daemon { get }
}

extension RequestFamily {
    var vault: Vault { daemon.vault }

    func log(_ line: String) { daemon.log(line) }

    func who(_ caller: CallerIdentity) -> String { daemon.who(caller) }

    func entitledGroups(_ caller: CallerIdentity) -> [String] { daemon.entitledGroups(caller) }

    func writableGroups(_ caller: CallerIdentity) -> [String] { daemon.writableGroups(caller) }

    func isAdministrator(_ caller: CallerIdentity) -> Bool { daemon.isAdministrator(caller) }

    func itemsChanged(_ event: ChangeEvent? = nil) { daemon.itemsChanged(event) }

    func audit(_ event: AuditEvent, _ caller: CallerIdentity?, _ detail: String = "-") throws {
        try daemon.audit(event, caller, detail)
    }

    func audit(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef) throws {
        try daemon.audit(event, caller: caller, item: ref)
    }

    func auditedChange<R>(_ event: AuditEvent, _ caller: CallerIdentity, _ detail: String = "-",
                          _ change: () throws -> R) throws -> R {
        try daemon.auditedChange(event, caller, detail, change)
    }
}
