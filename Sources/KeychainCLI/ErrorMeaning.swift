import KeychainClient
import KeychainModel
import KeychainProtocol

/// What Apple's sentence means here, printed on the line after it: scripts compare the sentence
/// and the status, which stay Apple's; people need the next step.
enum ErrorMeaning {
    /// The meaning of `status` for `vault`, or nil when there is nothing to add. Asks the
    /// vault's daemon (never starting one) whether it is locked.
    static func line(for status: KeychainStatus, vault: String?) -> String? {
        guard let vault else { return nil }
        // The daemon this command started exited at once: its log says why.
        if let why = DaemonClient.startFailure { return "its daemon did not start: \(why)" }
        switch status {
        case .interactionNotAllowed:
            // Also a presence-gated item with no approval program: only a lock is named.
            guard let client = try? DaemonClient.connect(vaultPath: vault), let status = try? client.status(), status.isLocked
            else { return nil }
            return "the vault is locked: run keychainfs unlock-keychain" + (vault == Paths.canonical(Paths.defaultVault()) ? "" : " \(vault)")
        case .notAvailable:
            return "no vault daemon for \(vault)"
        default:
            return nil
        }
    }
}
