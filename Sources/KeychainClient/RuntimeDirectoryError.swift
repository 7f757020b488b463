import KeychainModel

/// A vault's runtime directory that cannot be trusted: it says which directory, why, and what
/// to do. Its status stays errSecIO (exit 220), as before the reason was given.
public struct RuntimeDirectoryError: KeychainStatusConvertible, Sendable, CustomStringConvertible {
    public let directory: String
    public let reason: String
    public var status: KeychainStatus { .io }

    public var description: String {
        "refusing the runtime directory \(directory): \(reason), so another user could stand in for the vault's daemon. "
            + "Remove it (root can: rm -r \(directory)), or set KEYCHAINFS_RUNTIME_DIR, for every user of the vault, "
            + "to a directory that only the vault's owner can write."
    }
}
