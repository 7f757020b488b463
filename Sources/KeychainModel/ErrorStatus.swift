import KeychainCrypto

/// An error that stands for one keychain status at every boundary (socket, mount, CLI, API).
public protocol KeychainStatusConvertible: Error {
    var status: KeychainStatus { get }
}

/// An error of a lower layer that stands for a keychain status in some cases only (a full disk
/// among the store's errors); nil in the others, which each boundary reports its own way.
public protocol KeychainStatusConvertibleInPart: Error {
    var statusIfKnown: KeychainStatus? { get }
}

extension BackupFileError: KeychainStatusConvertible {}
extension VaultFileError: KeychainStatusConvertible {}

extension KeychainStatus {
    /// The one mapping from the errors of the engine, the store and the crypto layer (and any
    /// `KeychainStatusConvertible`) to Apple's statuses; nil for an error none of them defines,
    /// which each boundary reports its own way (the daemon logs its type and answers errSecIO).
    public init?(known error: any Error) {
        switch error {
        case let s as KeychainStatus: self = s
        case let e as KeychainStatusConvertible: self = e.status
        case let e as KeychainStatusConvertibleInPart:
            guard let status = e.statusIfKnown else { return nil }
            self = status
        case let e as CryptoError where e == .keyDerivationFailed || e == .allocationFailed: self = .allocate
        default: return nil
        }
    }
}
