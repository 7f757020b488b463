import KeychainfsAccess
import KeychainCore
import KeychainProtocol

/// What a handler reaches, and nothing else: the caller and its groups as the request began,
/// the vault, the audit writer, the change publisher and the presence approver. The
/// administration families (lock and unlock, settings, mounts, groups, the audit log, sync,
/// backups, stop) also reach the daemon's own parts, through `VaultControl`; the item and key
/// handlers, which serve nearly every request, do not.
///
/// A class: handlers pass it on by reference, where a struct of a dozen references would be
/// retained and released field by field at every copy.
final class RequestContext: Sendable {
    let caller: CallerIdentity
    let groups: GroupSnapshot
    let vault: Vault
    let audit: any AuditWriting
    let changes: any ChangePublishing
    let presence: any PresenceApproving
    /// The private keys the daemon keeps opened for key uses (`OpenedKeys`).
    let openedKeys: OpenedKeys
    let control: any VaultControl

    init(caller: CallerIdentity, groups: GroupSnapshot, vault: Vault, audit: any AuditWriting, changes: any ChangePublishing,
         presence: any PresenceApproving, openedKeys: OpenedKeys, control: any VaultControl) {
        self.caller = caller
        self.groups = groups
        self.vault = vault
        self.audit = audit
        self.changes = changes
        self.presence = presence
        self.openedKeys = openedKeys
        self.control = control
    }
}

/// The caller's access as of the request's start, read from the group table once.
struct GroupSnapshot: Sendable {
    /// Entitled access groups, in the table's order (the first is an add's default).
    let entitled: [String]
    let writable: [String]
    /// The vault's owner or root.
    let isAdministrator: Bool
    /// Entitled to a group that grants locking (`--may-lock`).
    let mayLock: Bool
    /// Entitled to a group that grants reading the audit log (`--may-audit`).
    let mayAudit: Bool

    /// Whether the caller holds `right`.
    func holds(_ right: Right) -> Bool {
        switch right {
        case .anyone: return true
        case .entitled: return isAdministrator || !entitled.isEmpty
        case .administrator: return isAdministrator
        case .locker: return isAdministrator || mayLock
        case .auditor: return isAdministrator || mayAudit
        }
    }
}

/// The audit log as handlers write it, and the daemon's log.
protocol AuditWriting: Sendable {
    func audit(_ event: AuditEvent, _ caller: CallerIdentity?, _ detail: String) throws
    func audit(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef) throws
    /// A line for the item with `note` after its reference (a relay's client).
    func audit(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef, note: String) throws
    /// A line per item for the first use, a count per second after it (reads, key uses).
    func auditRepeatable(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef) throws
    func auditedChange<R>(_ event: AuditEvent, _ caller: CallerIdentity, _ detail: String, _ change: () throws -> R) throws -> R
    func auditedItemChange<R>(_ event: AuditEvent, _ caller: CallerIdentity,
                              _ change: (_ record: ([PersistentRef]) throws -> Void) throws -> R) throws -> R
    func logLine(_ line: String)
    /// A caller as the daemon's log names it.
    func who(_ caller: CallerIdentity) -> String
}

/// Tells mounts, watchers and sync about a change.
protocol ChangePublishing: Sendable {
    func itemsChanged(_ event: ChangeEvent?)
    func publish(_ event: ChangeEvent)
}

/// Asks the approval program before a presence-gated item is used.
protocol PresenceApproving: Sendable {
    /// The items `probe` finds that need presence, each asked about; the approved ones.
    /// - Parameter relayed: a relay's client, named to the approval program beside the caller.
    func approveGatedItems(_ probe: Attributes, groups: [String], caller: CallerIdentity, relayed: RelayedUse?) throws -> Set<PersistentRef>
}

extension PresenceApproving {
    func approveGatedItems(_ probe: Attributes, groups: [String], caller: CallerIdentity) throws -> Set<PersistentRef> {
        try approveGatedItems(probe, groups: groups, caller: caller, relayed: nil)
    }
}

extension Daemon: AuditWriting, ChangePublishing, PresenceApproving {
    func logLine(_ line: String) { log(line) }

    func publish(_ event: ChangeEvent) { events.publish(event) }

    /// The caller's groups and grants, read in one section of the state's lock.
    func groupSnapshot(of caller: CallerIdentity) -> GroupSnapshot {
        state.withLock { groupSnapshot(of: caller, in: $0) }
    }

    private func groupSnapshot(of caller: CallerIdentity, in s: DaemonState) -> GroupSnapshot {
        let table = s.groupTable.groups.isEmpty
            ? AccessGroupTable(groups: [AccessGroup(name: "default", owner: ownerUID, gid: ownerGID)]) : s.groupTable
        return GroupSnapshot(entitled: table.entitled(caller), writable: table.writable(caller), isAdministrator: isAdministrator(caller),
                             mayLock: table.grantsLock(to: caller), mayAudit: table.grantsAudit(to: caller))
    }

    /// The caller's context as of now. A caller's requests (a connection's, all of one identity)
    /// get the same one until the group table changes: its snapshot is made once, not per request.
    func context(for caller: CallerIdentity) -> RequestContext {
        state.withLock { s in
            // One context per identity; the newest first, and the process id before the whole
            // identity, so the others are passed over without copying their groups and executable.
            if let kept = s.contexts.last(where: { $0.caller.pid == caller.pid && $0.caller == caller }) { return kept }
            let made = RequestContext(caller: caller, groups: groupSnapshot(of: caller, in: s), vault: vault, audit: self,
                                      changes: self, presence: self, openedKeys: openedKeys, control: self)
            if s.contexts.count >= DaemonState.contextLimit { s.contexts.removeFirst() }
            s.contexts.append(made)
            return made
        }
    }
}
