import KeychainCrypto

/// Private keys the daemon uses for its callers (`SecKeyCreateSignature` and friends on a key
/// from the keychain): the bytes leave the vault for the operation only, never in a reply.
extension Vault {
    /// The attributes and key bytes of the private key `ref` names, for an operation the daemon
    /// runs with it. The same rules as a search that returns the secret: the caller's access
    /// groups, the class key's lock state and presence approval (`approved`); what a search
    /// does not give, extractability is not asked for.
    /// - Throws: `itemNotFound` (also for an item outside `accessGroups` or a public key),
    ///   `interactionNotAllowed` when locked or not approved, `decode` when damaged.
    public func privateKey(_ ref: PersistentRef, accessGroups: [String],
                           approved: Set<PersistentRef> = []) throws -> (attributes: Attributes, secret: SecureBytes) {
        guard ref.itemClass == .key else { throw KeychainStatus.itemNotFound }
        var query = try ParsedQuery([.valuePersistentRef: .data(ref.bytes)], operation: .search)
        query.synchronizable = nil  // a reference names one item whatever its sync
        return try withReader { reader in
            let matches = try search(query, in: reader, accessGroups: accessGroups, needSecret: true, limit: 1, approved: approved)
            guard let m = matches.first, m.attributes[.keyClass]?.integerView == 1, let secret = m.secret else {
                throw KeychainStatus.itemNotFound
            }
            return (m.attributes, secret)
        }
    }

    /// Whether a match is a private key stored with `extr` false: its bytes are never returned.
    static func isUnextractable(_ m: Match) -> Bool {
        m.stored.itemClass == .key && m.attributes[.keyClass]?.integerView == 1 && m.attributes[.isExtractable]?.integerView == 0
    }
}
