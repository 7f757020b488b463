import KeychainCrypto

/// What `Vault.verify()` found.
public struct VerifyReport: Sendable {
    /// Items whose every blob opened and whose tokens match their attributes.
    public var checked = 0
    /// Items whose class key is locked now: not checked.
    public var locked = 0
    /// ThisDeviceOnly items of another machine: never checkable here.
    public var otherDevice = 0
    /// Persistent references (hex) of damaged items, with what is wrong.
    public var damaged: [String] = []
}

extension Vault {
    /// A full integrity check: every item whose class key is available must open (key,
    /// attributes, secret, clear columns) and have the primary-key, group and lookup tokens its
    /// attributes give. Reads only.
    /// - Throws: `interactionNotAllowed` when the index key is not available.
    public func verify() throws -> VerifyReport {
        try mutex.withLock {
            guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
            var report = VerifyReport()
            try store.rows(protections: ProtectionClass.allCases, synchronizableOnly: false) { item in
                let ref = Hex.encode(PersistentRef(itemClass: item.itemClass, uuid: item.uuid).bytes)
                let classKey: SecureBytes
                do { classKey = try availableKey(for: item.protection) } catch KeychainStatus.decode {
                    report.otherDevice += 1
                    return
                } catch {
                    report.locked += 1
                    return
                }
                guard let m = try nilUnlessOutOfMemory({ try open(item, classKey: classKey, needSecret: true) }) else {
                    report.damaged.append("\(ref) does not open")
                    return
                }
                m.secret?.wipe()
                if item.primaryKeyToken != IndexToken.primaryKey(m.attributes, itemClass: item.itemClass, key: indexKey) {
                    report.damaged.append("\(ref) primary-key token does not match")
                } else if try store.tokens(of: item.rowID)
                            != Set(lookupTokens(m.attributes, itemClass: item.itemClass, indexKey: indexKey)) {
                    report.damaged.append("\(ref) lookup tokens do not match")
                } else {
                    report.checked += 1
                }
            }
            return report
        }
    }
}
