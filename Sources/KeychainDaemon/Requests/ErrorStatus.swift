import KeychainCore
import KeychainCrypto
import KeychainFS
import SQLiteStore

extension Daemon {
    /// The status a request's error answers with: the daemon's one mapping from the errors of
    /// the engine, the store, the mount and the crypto layer to Apple's statuses. Nil for an
    /// error none of them defines (the caller logs its type and answers errSecIO).
    static func knownStatus(of error: any Error) -> KeychainStatus? {
        switch error {
        case let s as KeychainStatus: return s
        case let e as VaultFileError: return e.status
        case let e as BackupFileError: return e.status
        case is MountOptionError: return .param
        case let e as SQLiteError where e.isDiskFull: return .diskFull
        case let e as CryptoError where e == .keyDerivationFailed || e == .allocationFailed: return .allocate
        default: return nil
        }
    }

    static func status(of error: any Error) -> KeychainStatus { knownStatus(of: error) ?? .io }
}
