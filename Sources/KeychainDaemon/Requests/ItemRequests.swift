import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol

/// add, copyMatching, update and delete: Apple's SecItem calls over the caller's groups.
struct ItemRequests: RequestFamily {
    let daemon: Daemon

    func respond(_ request: Request, caller: CallerIdentity, onSlowWorker: Bool) throws -> Response {
        switch request.operation {
        case .add:
            let writable = writableGroups(caller)
            // A key the daemon makes (RSA can take a second; a TPM key a TPM round trip): on a slow worker.
            if request.options[KeyGeneration.option] != nil || TokenKeys.isTokenKey(request.query) {
                // Nobody makes the daemon spend a key generation on an add it would refuse.
                let group = request.query[.accessGroup]?.stringValue ?? writable.first
                guard let group, writable.contains(group) else { throw KeychainStatus.missingEntitlement }
                if !onSlowWorker { throw Deferral.toSlowWorker }
            }
            let (given, made, generated) = try KeyGeneration.prepare(request)
            defer { if generated { made?.wipe() } }
            var query = CertificateFacts.addQuery(StoredKeyFacts.addQuery(given, secret: made), secret: made)
            var secret = made
            // A Secure Enclave key is made here, in the TPM: the item holds only its wrapped form.
            if TokenKeys.isTokenKey(request.query) { (query, secret) = try TokenKeys.generate(query, secret: secret, log: log) }
            let r = try daemon.auditedItemChange(.add, caller) { record in
                try vault.add(query, secret: secret, accessGroups: writable, beforeChange: record)
            }
            let group = request.query[.accessGroup]?.stringValue ?? writable.first
            itemsChanged(ChangeEvent(kind: .add, query: request.query, groups: group.map { [$0] }))
            log("add \(who(caller))")
            return Response(result: r)
        case .copyMatching:
            return Response(result: try copyMatching(request.query, caller: caller, onSlowWorker: onSlowWorker))
        case .update:
            var groups = Set<String>()
            var names: [ChangedItemName] = []
            try TokenKeys.checkUpdate(query: request.query, changes: request.changes, secret: request.secrets.first) {
                try vault.copyMatching($0, accessGroups: entitledGroups(caller))
            }
            let changes = try StoredKeyFacts.changes(request.changes, query: request.query, secret: request.secrets.first)
            try daemon.auditedItemChange(.update, caller) { record in
                try readableButNotWritable(request.query, caller) {
                    groups = try vault.update(request.query, changes: changes, secret: request.secrets.first,
                                              accessGroups: writableGroups(caller), beforeChange: record) { names = $0 }
                }
            }
            var event = ChangeEvent(kind: .update, query: request.query, changes: request.changes, groups: Array(groups))
            if request.query[.service] == nil { event.name(names) }
            itemsChanged(event)
            log("update \(who(caller))")
            return Response()
        default:
            var groups = Set<String>()
            var names: [ChangedItemName] = []
            try daemon.auditedItemChange(.delete, caller) { record in
                try readableButNotWritable(request.query, caller) {
                    groups = try vault.delete(request.query, accessGroups: writableGroups(caller), beforeChange: record) { names = $0 }
                }
            }
            var event = ChangeEvent(kind: .delete, query: request.query, groups: Array(groups))
            if request.query[.service] == nil { event.name(names) }
            itemsChanged(event)
            log("delete \(who(caller))")
            return Response()
        }
    }

    private func copyMatching(_ query: Attributes, caller: CallerIdentity, onSlowWorker: Bool) throws -> QueryResult {
        let groups = entitledGroups(caller)
        let skip = query[.useAuthenticationUI] == .authenticationUISkip
        let result: QueryResult
        var read: [PersistentRef] = []
        do {
            // Most searches touch no presence-gated item: one search, no approval round.
            result = try vault.copyMatching(query, accessGroups: groups, skipUnapproved: skip, secretsReturned: &read)
        } catch KeychainStatus.interactionNotAllowed {
            // Asking the approval program waits: never on a thread that serves everyone.
            guard onSlowWorker else { throw Deferral.toSlowWorker }
            let approved = try approvePresence(query, groups: groups, caller: caller)
            guard !approved.isEmpty else { throw KeychainStatus.interactionNotAllowed }
            result = try vault.copyMatching(query, accessGroups: groups, approved: approved, skipUnapproved: skip,
                                            secretsReturned: &read)
        }
        // Each secret returned, by item: a process that asks for its secret on every request
        // gets one line for the first read and a count per second after it, as file opens do.
        // No line, no secret: a read whose line cannot be written is refused.
        for ref in read { try daemon.auditRepeatable(.read, caller: caller, item: ref) }
        return result
    }

    /// Before a search that returns secrets: finds the presence-gated items it would return and
    /// asks the approval program about each (never with the vault's lock held). A denial ends
    /// the search with the program's status; `u_AuthUIF` / `u_AuthUIS` ask nobody.
    private func approvePresence(_ query: Attributes, groups: [String], caller: CallerIdentity) throws -> Set<PersistentRef> {
        let wantsData = query[.returnData]?.isTrue == true
        // kSecUseAuthenticationUIFail / Skip and kSecUseNoAuthenticationUI: ask nobody.
        let noUI = query[.useNoAuthenticationUI]?.isTrue == true
        guard wantsData, !noUI, query[.useAuthenticationUI] == nil || query[.useAuthenticationUI] == .authenticationUIAllow else { return [] }
        var probe = query.filter { !$0.key.hasPrefix(.return) }
        probe[.returnAttributes] = .bool(true)
        probe[.returnPersistentRef] = .bool(true)
        return try approveGatedItems(probe, groups: groups, caller: caller)
    }

    /// Runs a change over the caller's writable groups. When it finds nothing there but the
    /// caller can read a match, the answer is a missing entitlement, not "not found".
    private func readableButNotWritable(_ query: Attributes, _ caller: CallerIdentity, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch KeychainStatus.itemNotFound {
            var probe = query.filter { !$0.key.hasPrefix(.match) && !$0.key.hasPrefix(.return) }
            probe[.matchLimit] = .matchLimitOne
            if (try? vault.copyMatching(probe, accessGroups: entitledGroups(caller))) != nil {
                throw KeychainStatus.missingEntitlement
            }
            throw KeychainStatus.itemNotFound
        }
    }
}

extension AttributeValue {
    /// A boolean query flag as callers send it: `true`, or a non-zero number.
    var isTrue: Bool {
        switch self {
        case .bool(let b): return b
        case .number(let n): return n != 0
        default: return false
        }
    }
}
