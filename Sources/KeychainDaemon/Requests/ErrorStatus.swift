import KeychainCore
import KeychainCrypto
import KeychainFS
import KeychainKeys
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
        case let e as KeyError: return keyStatus(e)
        default: return nil
        }
    }

    static func status(of error: any Error) -> KeychainStatus { knownStatus(of: error) ?? .io }

    /// Apple's statuses for key operations, as the Security module gives them for keys it holds.
    private static func keyStatus(_ e: KeyError) -> KeychainStatus {
        switch e {
        case .invalidKeyData, .invalidInput, .decryptionFailed: return .param
        case .unsupported: return .unimplemented
        case .verificationFailed: return KeychainStatus(rawValue: -67808)  // errSecVerifyFailed
        case .library: return .internalComponent
        }
    }
}
