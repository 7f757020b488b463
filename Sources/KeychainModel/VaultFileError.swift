/// Why a vault file could not be opened. Each case maps to a keychain status for callers that
/// speak `OSStatus`, and to a distinct CLI exit status.
public enum VaultFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No file at the path.
    case missing
    /// A file exists at the path given to `create`.
    case exists
    /// Not an SQLite database, or SQLite reports it corrupt or truncated.
    case notAVault
    /// An SQLite database without a readable keychainfs header.
    case corruptHeader
    /// Written by a newer keychainfs; this build reads formats up to `supported`.
    case newerFormat(found: Int, supported: Int)
    /// The file or its directory cannot be read or written.
    case io

    public var status: KeychainStatus {
        switch self {
        case .missing: return .noSuchKeychain
        case .exists: return .duplicateKeychain
        case .notAVault, .corruptHeader, .newerFormat: return .invalidKeychain
        case .io: return .io
        }
    }

    public var description: String {
        switch self {
        case .missing: return "The specified keychain could not be found."
        case .exists: return "A keychain with the same name already exists."
        case .notAVault: return "The file is not a keychainfs vault (not an SQLite database, or damaged)."
        case .corruptHeader: return "The vault header is missing or damaged."
        case .newerFormat(let found, let supported):
            return "The vault uses format version \(found); this keychainfs reads versions up to \(supported)."
        case .io: return "The vault file cannot be read or written."
        }
    }
}
