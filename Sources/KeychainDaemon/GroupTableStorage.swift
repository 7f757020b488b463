import KeychainCore
import KeychainCrypto
import KeychainfsAccess

/// Where the access-group table lives: a sealed setting of the vault. The daemon alone reads
/// and writes it (and `create-keychain`, which writes the first); KeychainfsAccess only
/// decides with it.
extension AccessGroupTable {
    /// Loads the table; an empty table when none was stored.
    /// - Throws: the vault's error, or `KeychainStatus.decode` for a stored table that does not read.
    public static func load(from vault: Vault) throws -> AccessGroupTable {
        guard let blob = try vault.sealedSetting(settingName) else { return AccessGroupTable(groups: []) }
        return try blob.withUnsafeBytes { try AccessGroupTable(encoded: $0) }
    }

    /// Stores the table in the vault, replacing the one there.
    /// - Throws: `KeychainStatus.param` for over 65,535 groups, `CryptoError.allocationFailed`,
    ///   or the vault's error.
    public func save(to vault: Vault) throws {
        try vault.setSealedSetting(Self.settingName, settingValue())
    }

    /// The table's bytes as the sealed setting `settingName` holds them, in guarded memory.
    /// - Throws: `KeychainStatus.param` for over 65,535 groups, `CryptoError.allocationFailed`.
    func settingValue() throws -> SecureBytes { try SecureBytes(copying: encoded()) }
}
