import Dispatch
import KeychainfsAccess
import KeychainCore
import KeychainFS

/// What a mount asks of the daemon: groups, approvals, audit lines and change notices.
extension Daemon: MountPolicy {
    public func group(named name: String) -> AccessGroup? {
        state.withLock {
            $0.groupTable.groups.isEmpty && name == "default"
                ? AccessGroup(name: "default", owner: ownerUID, gid: ownerGID) : $0.groupTable.group(named: name)
        }
    }

    public func allGroups() -> [String] {
        state.withLock { $0.groupTable.groups.isEmpty ? ["default"] : $0.groupTable.groups.map(\.name) }
    }

    public var directoryOwner: (uid: UInt32, gid: UInt32) { (ownerUID, ownerGID) }

    public func itemChanged(_ kind: ChangeKind, itemClass: ItemClass, service: [UInt8], account: [UInt8]?,
                            previous: (service: [UInt8], account: [UInt8]?)?, groups: [String]?, from origin: MountServer) {
        var event = ChangeEvent(kind: kind, service: service, account: account, previous: previous, groups: groups)
        // Mounts invalidate generic passwords by name; an internet password's change drops everything.
        if itemClass != .genericPassword { event.touched = nil }
        // From inside a kernel request of `origin`: the other mounts are handed the change on
        // their own queues, and the rest (watchers, on_change, sync) runs off this thread.
        for m in state.withLock({ $0.mounts }) where m !== origin { m.noticeChange(event.touched) }
        DispatchQueue.global().async { [self, event] in itemsChanged(event, mountsTold: true) }
    }

    public func approvePresence(ref: PersistentRef, attributes: Attributes, caller: CallerIdentity) -> KeychainStatus {
        guard let control = attributes[.accessControl].flatMap(AccessControl.init) else { return .success }
        let label = attributes[.label]?.stringValue ?? attributes[.service]?.stringValue ?? "item"
        let status = approvals.approve(ref: ref, label: label, control: control, caller: caller, vault: vault,
                                       settings: ApprovalAgent.settings(of: vault))
        do {
            try audit(status == .success ? .presenceApproved : .presenceDenied, caller: caller, item: ref)
        } catch {
            return error as? KeychainStatus ?? .io  // no line, no approval
        }
        return status
    }
}
