import KeychainCore
import KeychainKeys

extension Daemon {
    /// The status a request's error answers with: the daemon's one mapping from the errors of
    /// the engine, the store, the mount and the crypto layer to Apple's statuses. Nil for an
    /// error none of them defines (the caller logs its type and answers errSecIO).
    static func knownStatus(of error: any Error) -> KeychainStatus? {
        if let s = KeychainStatus(known: error) { return s }
        // The key library does not know KeychainStatus; it names Apple's status itself.
        if let e = error as? KeyError { return KeychainStatus(rawValue: e.appleStatus.status) }
        return nil
    }

    static func status(of error: any Error) -> KeychainStatus { knownStatus(of: error) ?? .io }
}
