import KeychainCrypto

extension Vault {
    /// A clear, non-secret setting stored in the vault (for example the idle lock timeout).
    public func setting(_ name: String) throws -> [UInt8]? {
        try mutex.withLock { try store.readMeta("setting." + name) }
    }

    /// Stores a clear, non-secret setting; durable when this returns.
    public func setSetting(_ name: String, _ value: [UInt8]) throws {
        try mutex.withLock { try store.writeMeta("setting." + name, value) }
    }

    /// A setting sealed under a key derived from the index key, so it is readable before the
    /// first unlock on this machine but not from the file alone (access-group configuration).
    /// - Throws: `interactionNotAllowed` when the index key is not available, `decode` when damaged.
    public func sealedSetting(_ name: String) throws -> SecureBytes? {
        try mutex.withLock {
            guard let box = try store.readMeta("sealed." + name) else { return nil }
            let key = try settingsKey()
            defer { key.wipe() }
            do { return try AEAD.open(box, key: key, associatedData: settingsAD(name)) }
            catch { throw isAllocationFailure(error) ? KeychainStatus.allocate : KeychainStatus.decode }
        }
    }

    /// Seals and stores a setting; see `sealedSetting`.
    public func setSealedSetting(_ name: String, _ value: SecureBytes) throws {
        try mutex.withLock { try storeSealedSettingLocked(name, value) }
    }

    /// `setSealedSetting` with the mutex already held (inside another transaction).
    func storeSealedSettingLocked(_ name: String, _ value: SecureBytes) throws {
        let key = try settingsKey()
        defer { key.wipe() }
        try store.writeMeta("sealed." + name, AEAD.seal(value, key: key, associatedData: settingsAD(name)))
    }

    /// A key for another purpose of the daemon's (the audit chain), derived from the index key:
    /// available whenever items can be looked up on this machine, never stored.
    public func derivedKey(purpose: String) throws -> SecureBytes {
        try mutex.withLock {
            guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
            return try KeyedHash.deriveKey(from: indexKey, context: Array("keychainfs \(purpose) v1".utf8) + header.vaultID)
        }
    }

    private func settingsKey() throws -> SecureBytes {
        guard let indexKey = keys.indexKey else { throw KeychainStatus.interactionNotAllowed }
        return try KeyedHash.deriveKey(from: indexKey, context: Array("keychainfs settings v1".utf8))
    }

    private func settingsAD(_ name: String) -> [UInt8] {
        header.vaultID + Array("setting".utf8) + Array(name.utf8)
    }
}
