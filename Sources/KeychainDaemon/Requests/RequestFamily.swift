import KeychainfsAccess
import KeychainCore

/// A family of request handlers (items, keys, groups, mounts, the audit log, administration):
/// a type each, in its own file, holding the request's context. The operation table
/// (`OperationTable`) checks the operation's right before a family sees the request, and the
/// daemon maps every error a family throws to a status.
protocol RequestFamily: Sendable {
    var context: RequestContext { get }
}

extension RequestFamily {
    var vault: Vault { context.vault }
    var caller: CallerIdentity { context.caller }
    var groups: GroupSnapshot { context.groups }

    func log(_ line: String) { context.audit.logLine(line) }

    func who(_ caller: CallerIdentity) -> String { context.audit.who(caller) }

    func itemsChanged(_ event: ChangeEvent? = nil) { context.changes.itemsChanged(event) }

    func audit(_ event: AuditEvent, _ caller: CallerIdentity?, _ detail: String = "-") throws {
        try context.audit.audit(event, caller, detail)
    }

    func audit(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef) throws {
        try context.audit.audit(event, caller: caller, item: ref)
    }

    func auditedChange<R>(_ event: AuditEvent, _ caller: CallerIdentity, _ detail: String = "-",
                          _ change: () throws -> R) throws -> R {
        try context.audit.auditedChange(event, caller, detail, change)
    }
}
