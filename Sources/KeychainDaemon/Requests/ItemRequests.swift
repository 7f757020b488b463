import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol

/// add, copyMatching, update and delete: Apple's SecItem calls over the caller's groups.
struct ItemRequests: RequestFamily {
    let context: RequestContext

    /// An add that makes a key (RSA can take a second; a TPM key a TPM round trip) runs on a
    /// slow worker.
    @Sendable static func makesKey(_ request: Request) -> Bool {
        request.options[.generate] != nil || TokenKeys.isTokenKey(request.query)
    }

    func add(_ request: ItemAdd) throws -> Outcome {
        let writable = groups.writable
        let group = request.attributes[.accessGroup]?.stringValue ?? writable.first
        // Nobody makes the daemon spend a key generation on an add it would refuse.
        if request.generate != nil || TokenKeys.isTokenKey(request.attributes) {
            guard let group, writable.contains(group) else { throw KeychainStatus.missingEntitlement }
        }
        let (given, made, generated) = try KeyGeneration.prepare(request)
        defer { if generated { made?.wipe() } }
        var query = CertificateFacts.addQuery(StoredKeyFacts.addQuery(given, secret: made), secret: made)
        var secret = made
        // A Secure Enclave key is made here, in the TPM: the item holds only its wrapped form.
        if TokenKeys.isTokenKey(request.attributes) { (query, secret) = try TokenKeys.generate(query, secret: secret, log: log) }
        let r = try context.audit.auditedItemChange(.add, caller) { record in
            try vault.add(query, secret: secret, accessGroups: writable, beforeChange: record)
        }
        itemsChanged(ChangeEvent(kind: .add, query: request.attributes, groups: group.map { [$0] }))
        log("add \(who(caller))")
        return .reply(ItemsReply(r))
    }

    func update(_ request: ItemUpdate) throws -> Outcome {
        var changed = Set<String>()
        var names: [ChangedItemName] = []
        try TokenKeys.checkUpdate(query: request.query, changes: request.changes, secret: request.secret) {
            try vault.copyMatching($0, accessGroups: groups.entitled)
        }
        let query = CertificateFacts.normalizingIssuer(request.query)
        let changes = CertificateFacts.changes(try StoredKeyFacts.changes(request.changes, query: query, secret: request.secret),
                                               query: query, secret: request.secret)
        try context.audit.auditedItemChange(.update, caller) { record in
            try readableButNotWritable(query) {
                changed = try vault.update(query, changes: changes, secret: request.secret,
                                           accessGroups: groups.writable, beforeChange: record) { names = $0 }
            }
        }
        var event = ChangeEvent(kind: .update, query: request.query, changes: request.changes, groups: Array(changed))
        if request.query[.service] == nil { event.name(names) }
        itemsChanged(event)
        log("update \(who(caller))")
        return .reply(StatusReply())
    }

    func delete(_ request: ItemDelete) throws -> Outcome {
        var changed = Set<String>()
        var names: [ChangedItemName] = []
        let query = CertificateFacts.normalizingIssuer(request.query)
        try context.audit.auditedItemChange(.delete, caller) { record in
            try readableButNotWritable(query) {
                changed = try vault.delete(query, accessGroups: groups.writable, beforeChange: record) { names = $0 }
            }
        }
        var event = ChangeEvent(kind: .delete, query: request.query, groups: Array(changed))
        if request.query[.service] == nil { event.name(names) }
        itemsChanged(event)
        log("delete \(who(caller))")
        return .reply(StatusReply())
    }

    /// Most searches touch no presence-gated item: one search, no approval round. One that
    /// does continues on a slow worker, which asks the approval program and searches again
    /// with the approved items; the request is not decoded or checked again.
    func search(_ request: ItemSearch) throws -> Outcome {
        let query = CertificateFacts.normalizingIssuer(request.query)
        let skip = query[.useAuthenticationUI] == .authenticationUISkip
        var read: [PersistentRef] = []
        let result: QueryResult
        do {
            result = try vault.copyMatching(query, accessGroups: groups.entitled, skipUnapproved: skip, secretsReturned: &read)
        } catch KeychainStatus.interactionNotAllowed {
            return .slow {
                let approved = try approvePresence(query)
                guard !approved.isEmpty else { throw KeychainStatus.interactionNotAllowed }
                var read: [PersistentRef] = []
                let result = try vault.copyMatching(query, accessGroups: groups.entitled, approved: approved, skipUnapproved: skip,
                                                    secretsReturned: &read)
                return try auditedReads(result, read)
            }
        }
        return try auditedReads(result, read)
    }

    /// Each secret returned, by item: a process that asks for its secret on every request
    /// gets one line for the first read and a count per second after it, as file opens do.
    /// No line, no secret: a read whose line cannot be written is refused.
    private func auditedReads(_ result: QueryResult, _ read: [PersistentRef]) throws -> Outcome {
        for ref in read { try context.audit.auditRepeatable(.read, caller: caller, item: ref) }
        return .reply(ItemsReply(result))
    }

    /// Before a search that returns secrets: finds the presence-gated items it would return and
    /// asks the approval program about each (never with the vault's lock held). A denial ends
    /// the search with the program's status; `u_AuthUIF` / `u_AuthUIS` ask nobody.
    private func approvePresence(_ query: Attributes) throws -> Set<PersistentRef> {
        let wantsData = query[.returnData]?.isTrue == true
        // kSecUseAuthenticationUIFail / Skip and kSecUseNoAuthenticationUI: ask nobody.
        let noUI = query[.useNoAuthenticationUI]?.isTrue == true
        guard wantsData, !noUI, query[.useAuthenticationUI] == nil || query[.useAuthenticationUI] == .authenticationUIAllow else { return [] }
        var probe = query.filter { !$0.key.hasPrefix(.return) }
        probe[.returnAttributes] = .bool(true)
        probe[.returnPersistentRef] = .bool(true)
        return try context.presence.approveGatedItems(probe, groups: groups.entitled, caller: caller)
    }

    /// Runs a change over the caller's writable groups. When it finds nothing there but the
    /// caller can read a match, the answer is a missing entitlement, not "not found".
    private func readableButNotWritable(_ query: Attributes, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch KeychainStatus.itemNotFound {
            var probe = query.filter { !$0.key.hasPrefix(.match) && !$0.key.hasPrefix(.return) }
            probe[.matchLimit] = .matchLimitOne
            if (try? vault.copyMatching(probe, accessGroups: groups.entitled)) != nil {
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
