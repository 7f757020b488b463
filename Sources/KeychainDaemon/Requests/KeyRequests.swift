import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainKeys
import KeychainProtocol

/// useKey: signs, decrypts or agrees on a secret with a stored private key, as Apple's
/// securityd does for keys that live in it. The key is opened under the same rules as a read of
/// its secret (the caller's groups, the lock, presence approval), on every use; its bytes are
/// parsed in guarded memory and wiped, and the parsed key is kept for the next use
/// (`OpenedKeys`); only the result goes back. Each use is an audit line (`sign`, `decrypt`,
/// `key-exchange`), counted per process as repeated reads are.
struct KeyRequests: RequestFamily {
    let context: RequestContext

    /// A presence-gated key continues on a slow worker, which asks the approval program first.
    func use(_ request: KeyUseRequest) throws -> Outcome {
        guard let ref = PersistentRef(bytes: request.ref) else { throw KeychainStatus.param }
        guard let algorithm = AppleAlgorithm(rawName: request.algorithm) else { throw KeychainStatus.unimplemented }
        // Only keychainfs's own agent relays, and it serves its own user and root: it may name
        // no one else.
        if let relayed = request.relayed {
            guard ApprovalAgent.isTrustedRelay(caller), relayed.uid == caller.uid || relayed.uid == 0 else { throw KeychainStatus.param }
        }
        let opened: OpenedKey
        do {
            opened = try context.openedKeys.open(ref, in: vault, accessGroups: groups.entitled)
        } catch KeychainStatus.interactionNotAllowed {
            let query = request.interaction
            let noUI = query[.useNoAuthenticationUI]?.isTrue == true
                || (query[.useAuthenticationUI] != nil && query[.useAuthenticationUI] != .authenticationUIAllow)
            if noUI { throw KeychainStatus.interactionNotAllowed }
            return .slow { .reply(try run(request, algorithm, ref: ref, opened: try approvedKey(ref, relayed: request.relayed))) }
        }
        return .reply(try run(request, algorithm, ref: ref, opened: opened))
    }

    private func run(_ request: KeyUseRequest, _ algorithm: AppleAlgorithm, ref: PersistentRef, opened: OpenedKey) throws -> KeyUseReply {
        defer { opened.tokenBlob?.wipe() }
        let use = request.use
        let attributes = opened.attributes
        try Self.checkUsage(use, attributes)
        // A raw RSA signature is the private operation itself, which decrypts as well: a key that
        // may not decrypt does not sign raw either.
        if case .rsaSignatureRaw = algorithm { try Self.checkUsage(.decrypt, attributes) }
        if let blob = opened.tokenBlob {
            let (event, result) = try TokenKeys.use(request, algorithm, blob: blob, log: log)
            return try answer(result, event: event, caller: caller, ref: ref, relayed: request.relayed)
        }
        guard let type = attributes[.keyType]?.numberValue, let key = opened.key
        else { throw KeychainStatus.decode }  // the item's bytes are not the key it says
        let input = request.input
        let result: SecureBytes
        let event: AuditEvent
        switch use {
        case .sign:
            event = .sign
            let signature = try input.withUnsafeBytes { try algorithm.sign($0, with: key) }
            result = try SecureBytes(copying: signature)
        case .decrypt:
            event = .decrypt
            result = try input.withUnsafeBytes { try algorithm.decrypt($0, with: key) }
        case .keyExchange:
            event = .keyExchange
            guard let peerBytes = request.peer,
                  let peer = try? peerBytes.withUnsafeBytes({ try AsymmetricKey.apple(type: type, isPrivate: false, $0) })
            else { throw KeychainStatus.param }
            let size = request.requestedSize.map { Int(clamping: $0) }
            result = try algorithm.exchange(with: key, peer: peer, requestedSize: size, sharedInfo: request.sharedInfo ?? [])
        }
        return try answer(result, event: event, caller: caller, ref: ref, relayed: request.relayed)
    }

    /// The use's audit line, then its result. No line, no result: a use whose line cannot be
    /// written is refused.
    private func answer(_ result: SecureBytes, event: AuditEvent, caller: CallerIdentity, ref: PersistentRef,
                        relayed: RelayedUse?) throws -> KeyUseReply {
        do {
            if let relayed {
                // A relay's use gets a line of its own: its clients differ from use to use.
                try context.audit.audit(event, caller: caller, item: ref, note: Self.note(relayed))
            } else {
                try context.audit.auditRepeatable(event, caller: caller, item: ref)
            }
        } catch {
            result.wipe()
            throw error
        }
        return KeyUseReply(output: result)
    }

    /// The relay's client as its audit line names it: `for-uid=U for-pid=P`, then `for-host=H` and
    /// `for-exe=PATH` when given, the executable last since a path may hold spaces.
    static func note(_ relayed: RelayedUse) -> String {
        var note = "for-uid=\(relayed.uid) for-pid=\(relayed.pid)"
        if let host = relayed.host { note += " for-host=" + host }
        note += " for-exe=" + (relayed.executable ?? "-")
        return note
    }

    /// The usage flag a use needs: `sign` (kSecAttrCanSign), `decr` (kSecAttrCanDecrypt), `drve`
    /// (kSecAttrCanDerive). A key stored with it false is refused with errSecKeyUsageIncorrect
    /// (-67731), as macOS's keychain refuses it: its CSP checks the key header's usage
    /// (`CSSMERR_CSP_KEY_USAGE_INCORRECT`, "the key does not have the proper usage flags to
    /// perform the operation", cssmerr.h), which SecBase maps to errSecKeyUsageIncorrect. A key
    /// without the attribute (none is stored so) may be used.
    static func checkUsage(_ use: KeyUse, _ attributes: Attributes) throws {
        let flag: AttributeKey
        switch use {
        case .sign: flag = .canSign
        case .decrypt: flag = .canDecrypt
        case .keyExchange: flag = .canDerive
        }
        switch attributes[flag] {
        case .bool(false)?, .number(0)?, .string("0")?: throw KeychainStatus.keyUsageIncorrect
        default: return
        }
    }

    /// A presence-gated key, opened once the approval program approved its use.
    private func approvedKey(_ ref: PersistentRef, relayed: RelayedUse?) throws -> OpenedKey {
        let probe: Attributes = [.class: .string(ItemClass.key.rawValue), .valuePersistentRef: .data(ref.bytes),
                                 .synchronizable: .synchronizableAny, .returnAttributes: true, .returnPersistentRef: true]
        let approved = try context.presence.approveGatedItems(probe, groups: groups.entitled, caller: caller, relayed: relayed)
        guard !approved.isEmpty else { throw KeychainStatus.interactionNotAllowed }
        return try context.openedKeys.open(ref, in: vault, accessGroups: groups.entitled, approved: approved)
    }
}

/// The public key (`pubk`) of key items, which the daemon derives from the key's bytes so that
/// a client can hold a stored key's public half without its private one.
enum StoredKeyFacts {
    static let attribute = ItemClass.publicKeyAttribute

    static func isKeyItem(_ query: Attributes) -> Bool {
        if case .string(let name)? = query[.class] { return ItemClass(name: name) == .key }
        if case .data(let bytes)? = query[.valuePersistentRef] { return PersistentRef(bytes: bytes)?.itemClass == .key }
        return false
    }

    /// An add query with `pubk` set from the key bytes (any value the caller gave is replaced);
    /// bytes that are not a key of the item's type and class get none.
    static func addQuery(_ query: Attributes, secret: SecureBytes?) -> Attributes {
        guard isKeyItem(query) else { return query }
        var q = query
        q[attribute] = nil
        if let secret, hasPublicHalf(query[.keyClass]?.numberValue), let pub = publicKey(of: secret, type: query[.keyType]?.numberValue,
                                           isPrivate: query[.keyClass]?.numberValue.map { $0 == 1 }) {
            q[attribute] = .data(pub)
            // Apple's application label is the SHA-1 of the public key; a caller that holds only
            // the key's bytes (an SSH agent) leaves it to the keychain, as SecItemAdd of a SecKey does.
            if q[.applicationLabel] == nil { q[.applicationLabel] = .data(DigestAlgorithm.sha1.hash(pub)) }
        }
        return q
    }

    /// Update changes of key items: `pubk` is the daemon's (errSecNoSuchAttr); new key bytes
    /// bring their public key, or an empty one when they are not a key.
    static func changes(_ changes: Attributes, query: Attributes, secret: SecureBytes?) throws -> Attributes {
        guard isKeyItem(query) else { return changes }
        guard changes[attribute] == nil else { throw KeychainStatus.noSuchAttr }
        guard let secret else { return changes }
        var c = changes
        let type = changes[.keyType]?.numberValue ?? query[.keyType]?.numberValue
        let keyClass = changes[.keyClass]?.numberValue ?? query[.keyClass]?.numberValue
        let pub = hasPublicHalf(keyClass) ? publicKey(of: secret, type: type, isPrivate: keyClass.map { $0 == 1 }) : nil
        c[attribute] = .data(pub ?? [])
        return c
    }

    /// A key's protection only tightens, as on macOS: an update may not make a non-extractable key
    /// extractable or a sensitive key readable, and `next`/`asen` (what the key has always been)
    /// are not changed at all. Otherwise any writer of the key's group could read its bytes. An
    /// update that brings the key's bytes itself (`import --replace`) replaces the key, and may
    /// set them as it likes: its caller holds those bytes already.
    /// - Throws: errSecParam for such a change.
    static func checkProtection(query: Attributes, changes: Attributes, newKey: Bool,
                                matching: (Attributes) throws -> QueryResult) throws {
        guard isKeyItem(query), !newKey else { return }
        guard changes[.neverExtractable] == nil, changes[.alwaysSensitive] == nil else { throw KeychainStatus.param }
        let loosensExtractable = changes[.isExtractable]?.isTrue == true
        let loosensSensitive = changes[.isSensitive].map { !$0.isTrue } ?? false
        guard loosensExtractable || loosensSensitive else { return }
        for attributes in try storedItems(query, matching: matching).compactMap({ $0.item?.attributes }) {
            if loosensExtractable, let extractable = attributes[.isExtractable], !extractable.isTrue { throw KeychainStatus.param }
            if loosensSensitive, attributes[.isSensitive]?.isTrue == true { throw KeychainStatus.param }
        }
    }

    /// The stored items an update's `query` names, with their attributes, for a check before the
    /// update. None found is no items; any other failure is thrown, so a check never passes
    /// for want of a look.
    static func storedItems(_ query: Attributes, matching: (Attributes) throws -> QueryResult) throws -> [ReturnedValue] {
        var probe = query.filter { !$0.key.hasPrefix(.match) && !$0.key.hasPrefix(.return) }
        probe[.returnAttributes] = .bool(true)
        probe[.matchLimit] = .matchLimitAll
        do {
            switch try matching(probe) {
            case .value(let v): return [v]
            case .array(let a): return a
            default: return []
            }
        } catch KeychainStatus.itemNotFound {
            return []
        }
    }

    /// Whether a key of this class (`kcls`) has a public half to derive: public (0) and private
    /// (1) keys, or a class not given. A symmetric key (2) has none, and its bytes must never be
    /// read as one: any 32 bytes pass as an Ed25519 public key, which would copy the secret
    /// itself into `pubk`.
    static func hasPublicHalf(_ keyClass: Int64?) -> Bool { keyClass == nil || keyClass == 0 || keyClass == 1 }

    /// The public key of `secret` read as a key of `type` and class (each tried when unknown,
    /// private first: 32 bytes of unknown class are taken as an Ed25519 seed).
    static func publicKey(of secret: SecureBytes, type: Int64?, isPrivate: Bool?) -> [UInt8]? {
        for t in type.map({ [$0] }) ?? [73, 42, AsymmetricKey.ed25519TypeCode] {
            for p in isPrivate.map({ [$0] }) ?? [true, false] {
                if let key = try? secret.withUnsafeBytes({ try AsymmetricKey.apple(type: t, isPrivate: p, $0) }) {
                    return key.publicBytes()
                }
            }
        }
        return nil
    }
}
