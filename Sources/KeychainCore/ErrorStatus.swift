import KeychainCrypto
import SQLiteStore

/// An error that stands for one keychain status at every boundary (socket, mount, CLI, API).
public protocol KeychainStatusConvertible: Error {
    var status: KeychainStatus { get }
}

extension VaultFileError: KeychainStatusConvertible {}
extension BackupFileError: KeychainStatusConvertible {}

extension KeychainStatus {
    /// The one mapping from the errors of the engine, the store and the crypto layer (and any
    /// `KeychainStatusConvertible`) to Apple's statuses; nil for an error none of them defines,
    /// which each boundary reports its own way (the daemon logs its type and answers errSecIO).
    public init?(known error: any Error) {
        switch error {
        case let s as KeychainStatus: self = s
        case let e as KeychainStatusConvertible: self = e.status
        case let e as SQLiteError where e.isDiskFull: self = .diskFull
        case let e as CryptoError where e == .keyDerivationFailed || e == .allocationFailed: self = .allocate
        default: return nil
        }
    }
}
