import KeychainfsAccess

/// Who hears of a change. Every signal is sent to one connection at a time (a destination set
/// on each message), never broadcast: a change in a group reaches only the connections whose
/// caller may read that group, so a connection of another uid learns nothing of the group's
/// items, not even their paths or when they change. The connections known are those that have
/// called this service (each pinned at its first call) and are still on the bus.
extension SecretService {
    /// The connections that may learn of a change in `group`, decided as their calls are: each
    /// pinned identity against the vault's group table (read once per call or change round).
    /// None when the table cannot be read (the daemon is away): nothing is said then.
    func recipients(of group: String) -> [String] {
        guard !identities.isEmpty else { return [] }
        if signalTable == nil { signalTable = try? groupTable() }
        guard let table = signalTable, let owner = try? vault.owner() else { return [] }
        return identities.filter { CallerAccess(caller: $0.value, table: table, provider: provider, owner: owner).readable.contains(group) }
            .map(\.key).sorted()
    }

    /// Sends `member` from `path` to each connection that may see `group`, or to `only`; `body`
    /// appends the arguments. After the reply of the call being handled when `afterReply`.
    func signal(_ member: String, interface: String, path: String, group: String?, only: String? = nil,
                afterReply: Bool, _ body: (OutgoingMessage) throws -> Void) {
        let destinations = only.map { [$0] } ?? group.map(recipients(of:)) ?? []
        for destination in destinations {
            guard let s = try? bus.signal(path: path, interface: interface, member: member, destination: destination),
                  (try? body(s)) != nil else { continue }
            if afterReply { bus.sendAfterReply(s) } else { bus.send(s) }
        }
    }
}
