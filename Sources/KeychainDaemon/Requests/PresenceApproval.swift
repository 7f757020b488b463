import KeychainfsAccess
import KeychainCore
import KeychainProtocol

extension Daemon {
    /// Asks the approval program about each presence-gated item `probe` finds (a search with
    /// `r_Attributes` and `r_PersistentRef`), never with the vault's lock held. A denial ends
    /// the round with the program's status; without a program nobody is asked.
    /// - Returns: the items whose use was approved for this request.
    func approveGatedItems(_ probe: Attributes, groups: [String], caller: CallerIdentity,
                           relayed: RelayedUse?) throws -> Set<PersistentRef> {
        let settings = ApprovalAgent.settings(of: vault)
        guard settings.program != nil else { return [] }  // nobody to ask
        guard let found = try? vault.copyMatching(probe, accessGroups: groups) else { return [] }
        let items: [FoundItem]
        switch found {
        case .value(let v): items = v.item.map { [$0] } ?? []
        case .array(let a): items = a.compactMap(\.item)
        case .none: items = []
        }
        let gated = items.compactMap { item -> (PersistentRef, String, AccessControl)? in
            guard let c = item.attributes[.accessControl].flatMap(AccessControl.init), c.requiresPresence,
                  let bytes = item.persistentRef, let ref = PersistentRef(bytes: bytes) else { return nil }
            return (ref, item.attributes[.label]?.stringValue ?? item.attributes[.service]?.stringValue ?? "item", c)
        }
        var approved = Set<PersistentRef>()
        for (ref, label, control) in gated {
            let status = approvals.approve(ref: ref, label: label, control: control, caller: caller, relayed: relayed,
                                           vault: vault, settings: settings)
            try audit(status == .success ? .presenceApproved : .presenceDenied, caller: caller, item: ref)
            // Nobody to ask, or nobody who can open it (an application password): the engine
            // refuses this one; the others are still asked.
            if status == .interactionNotAllowed { continue }
            guard status == .success else { throw status }
            approved.insert(ref)
        }
        return approved
    }
}
