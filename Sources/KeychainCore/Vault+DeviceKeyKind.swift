import KeychainCrypto
import KeychainSystem
import SQLiteStore

/// Where a vault's device key is kept, recorded in the vault (a clear setting) so a daemon
/// whose TPM-sealed key file is missing refuses to start instead of making a new plain key.
/// Vaults without the setting (all made before TPM sealing) use a plain key file.
extension Vault {
    public static let deviceKeyKindSetting = "device-key-kind"

    /// The recorded kind ("file" or "tpm2") of the vault at `path`, read without a device key;
    /// nil when none is recorded or the file cannot be read (`open` then says why). A file cut
    /// short is not opened here: SQLite would make its -wal and -shm beside it.
    public static func recordedDeviceKeyKind(at path: String) -> String? {
        guard FileSystem.isAccessible(path, for: .read), (try? checkNotTruncated(path)) != nil, let db = try? Connection(path: path, create: false, readOnly: true),
              let bytes = try? ItemStore(db: db).readMeta("setting." + deviceKeyKindSetting) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// True when the vault was made with `device` (its header holds that key's identifier).
    public func wasMade(with device: DeviceKey) -> Bool {
        mutex.withLock { header.deviceKeyID == device.identifier }
    }

    /// A secret only the vault passphrase gives on any machine: derived from the WhenUnlocked
    /// class key, which a passphrase change re-wraps but keeps. It authorises the TPM-sealed
    /// device key's recovery copy (docs/tpm.md).
    /// - Throws: `interactionNotAllowed` while locked.
    public func deviceKeyRecoverySecret() throws -> SecureBytes {
        try mutex.withLock {
            guard let classKey = keys.key(for: .whenUnlocked) else { throw KeychainStatus.interactionNotAllowed }
            return try KeyedHash.deriveKey(from: classKey, context: Array("keychainfs tpm recovery v1".utf8) + header.vaultID)
        }
    }
}
