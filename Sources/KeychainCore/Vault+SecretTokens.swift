import KeychainCrypto

/// Blind tokens for Secret Service attributes (docs/vault-format.md): one per (name, value) pair
/// of a generic password's `SecretServicePairs`, in the `tokens` table with its lookup tokens,
/// so a search by pairs opens only the items holding every pair. Schema version 2 has them for
/// every generic password; a version-1 vault gets them once, at its first such search with
/// every generic password readable (`rebuildSecretTokensIfNeeded`), and until then searches by
/// opening every candidate.
extension IndexToken {
    /// A 16-byte token for one Secret Service attribute pair.
    static func secretAttribute(_ name: String, _ value: String, key: SecureBytes) -> [UInt8] {
        KeyedHash.hash(key: key, length: 16) { h in
            h.append("ssat")
            feedLengthPrefixed(name, to: h)
            feedLengthPrefixed(value, to: h)
        }
    }
}

extension Vault {
    /// The pair tokens of a generic password's attributes, once the store keeps them.
    func secretAttributeTokens(_ attributes: Attributes, itemClass: ItemClass, indexKey: SecureBytes) -> [[UInt8]] {
        guard itemClass == .genericPassword, store.hasSecretAttributeTokens else { return [] }
        return SecretServicePairs.of(attributes).map { IndexToken.secretAttribute($0.key, $0.value, key: indexKey) }
    }

    /// The tokens a search by `q`'s pairs narrows by: none until the store keeps them.
    func secretSearchTokens(_ q: ParsedQuery, indexKey: SecureBytes) -> [[UInt8]] {
        guard store.hasSecretAttributeTokens else { return [] }
        // Sorted, so the same query always starts from the same token.
        return q.secretAttributes.sorted { $0.key < $1.key }.map { IndexToken.secretAttribute($0.key, $0.value, key: indexKey) }
    }

    /// Gives a version-1 store its pair tokens, when a search asks for pairs and every generic
    /// password can be opened now (the vault unlocked, no item of another device); otherwise
    /// leaves it for a later search. Call with the mutex held, outside any transaction.
    func rebuildSecretTokensIfNeeded(_ q: ParsedQuery) {
        guard !q.secretAttributes.isEmpty, !store.hasSecretAttributeTokens, let indexKey = keys.indexKey else { return }
        var pending: [(rowID: Int64, tokens: [[UInt8]])] = []
        do {
            try store.rows(protections: ProtectionClass.allCases, synchronizableOnly: false) { item in
                guard item.itemClass == .genericPassword else { return }
                let opened = try open(item, classKey: try availableKey(for: item.protection), needSecret: false)
                let tokens = SecretServicePairs.of(opened.attributes).map {
                    IndexToken.secretAttribute($0.key, $0.value, key: indexKey)
                }
                pending.append((item.rowID, tokens))
            }
            try store.db.transaction {
                for p in pending { try store.addTokens(p.tokens, rowID: p.rowID) }
                try store.markSecretAttributeTokens()
            }
            store.hasSecretAttributeTokens = true
        } catch {
            return  // locked, damaged or busy: searches scan until a later one succeeds
        }
    }

    /// Attribute blobs opened by searches since the vault was opened (tests count what a
    /// token search decrypts).
    package var attributeOpenCount: Int { attributeOpens.load(ordering: .relaxed) }
}
