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
        try StoredKeyFacts.checkProtection(query: request.query, changes: request.changes, newKey: request.secret != nil) {
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
            return approvedSearch(query, skipUnapproved: skip)
        }
        return try auditedReads(result, read)
    }

    /// A `lookup`: the search of its query (`ItemLookup.query`) without the query dictionary,
    /// straight to the vault's primary-key lookup. A password's issuer needs no normalising
    /// and the query asks for the approval program's UI; one that meets a presence-gated item
    /// (or a locked vault) continues as that query's `search` does, on a slow worker.
    func lookUp(_ request: ItemLookup) throws -> Outcome {
        var read: [PersistentRef] = []
        let result: QueryResult
        do {
            result = try vault.copyMatching(request.itemClass, primaryKey: request.primaryKey, accessGroup: request.accessGroup,
                                            returnData: request.returnData, returnAttributes: request.returnAttributes,
                                            returnPersistentRef: request.returnPersistentRef, accessGroups: groups.entitled,
                                            secretsReturned: &read)
        } catch KeychainStatus.interactionNotAllowed {
            return approvedSearch(request.query, skipUnapproved: false)
        }
        return try auditedReads(result, read)
    }

    /// The rest of a search that met a presence-gated item, on a slow worker: asks the approval
    /// program and searches again with the approved items.
    private func approvedSearch(_ query: Attributes, skipUnapproved skip: Bool) -> Outcome {
        .slow {
            let approved = try approvePresence(query)
            guard !approved.isEmpty else { throw KeychainStatus.interactionNotAllowed }
            var read: [PersistentRef] = []
            let result = try vault.copyMatching(query, accessGroups: groups.entitled, approved: approved, skipUnapproved: skip,
                                                secretsReturned: &read)
            return try auditedReads(result, read)
        }
    }

    /// Each secret returned, by item: a process that asks for its secret on every request
    /// gets one line for the first read and a count per second after it, as file opens do.
    /// No line, no secret: a read whose line cannot be written is refused.
    private func auditedReads(_ result: QueryResult, _ read: [PersistentRef]) throws -> Outcome {
        for ref in read { try context.audit.auditRepeatable(.read, caller: caller, item: ref) }
        return .reply(ItemsReply(withPublicKeys(result)))
    }

    /// `result` with the public key (`pubk`) of every key item it returns with its attributes
    /// and reference but without one: a key stored before the daemon derived `pubk` gets it at
    /// its first such search (a `kSecReturnRef` search is one), from its own bytes, and keeps it.
    /// The bytes are read as a use reads them (the caller's groups, the lock, presence) and
    /// never leave the daemon; a key that cannot be opened now (locked, presence-gated,
    /// bytes that are not its key) is returned as it is, and tried again at its next search.
    private func withPublicKeys(_ result: QueryResult) -> QueryResult {
        func fill(_ value: ReturnedValue) -> ReturnedValue {
            // A symmetric key has no public half: a `pubk` an older daemon stored for one holds
            // the key's own bytes, and is never returned.
            if case .item(var item) = value, item.attributes[StoredKeyFacts.attribute] != nil,
               !StoredKeyFacts.hasPublicHalf(item.attributes[.keyClass]?.numberValue) {
                item.attributes[StoredKeyFacts.attribute] = nil
                return .item(item)
            }
            guard case .item(var item) = value, item.attributes[StoredKeyFacts.attribute] == nil,
                  let ref = item.persistentRef.flatMap(PersistentRef.init(bytes:)), ref.itemClass == .key,
                  let keyClass = item.attributes[.keyClass]?.numberValue,
                  let pub = storedPublicKey(ref, keyClass: keyClass, type: item.attributes[.keyType]?.numberValue,
                                            group: item.attributes[.accessGroup]?.stringValue) else { return value }
            item.attributes[StoredKeyFacts.attribute] = .data(pub)
            return .item(item)
        }
        switch result {
        case .none: return result
        case .value(let v): return .value(fill(v))
        case .array(let a): return .array(a.map(fill))
        }
    }

    /// Derives and stores the public key of the key item `ref`; nil when its bytes cannot be
    /// read now or are not a key of its type and class.
    private func storedPublicKey(_ ref: PersistentRef, keyClass: Int64, type: Int64?, group: String?) -> [UInt8]? {
        guard StoredKeyFacts.hasPublicHalf(keyClass) else { return nil }
        let secret: SecureBytes
        if keyClass == 1 {
            guard let opened = try? vault.privateKey(ref, accessGroups: groups.entitled) else { return nil }
            secret = opened.secret
        } else {
            let read: Attributes = [.valuePersistentRef: .data(ref.bytes), .synchronizable: .synchronizableAny, .returnData: true]
            guard case .value(.data(let bytes))? = try? vault.copyMatching(read, accessGroups: groups.entitled) else { return nil }
            secret = bytes
        }
        defer { secret.wipe() }
        guard let pub = StoredKeyFacts.publicKey(of: secret, type: type, isPrivate: keyClass == 1) else { return nil }
        // The daemon's own change, in the item's group: a caller who may only read it still
        // gets the key stored with its public half. Not stored (the vault locked meanwhile, a
        // read-only vault file): returned all the same, and derived again next time.
        let query: Attributes = [.valuePersistentRef: .data(ref.bytes), .synchronizable: .synchronizableAny]
        if let group, (try? vault.update(query, changes: [StoredKeyFacts.attribute: .data(pub)], accessGroups: [group])) != nil {
            itemsChanged(ChangeEvent(kind: .update, query: query, groups: [group]))
            log("pubk derived for a key stored before it existed \(who(caller))")
        }
        return pub
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
