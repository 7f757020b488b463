import KeychainClient
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// What Apple's sentence means here, printed on the lines after it: scripts compare the sentence
/// and the status, which stay Apple's; people need the next step.
enum ErrorMeaning {
    /// Verbs for which errSecAuthFailed can only be a refusal of the caller (they check no
    /// passphrase): the daemon keeps them for the vault's owner and root.
    static let administration: Set<String> = [
        "set-keychain-settings", "stop", "group", "verify", "mount", "sync", "history", "purge-other-device-items",
    ]

    /// The meaning of `status` for `vault` when `verb` failed with it; none when there is
    /// nothing to add. Asks the vault's daemon (never starting one) whether it is locked.
    static func lines(for status: KeychainStatus, vault: String?, verb: String? = nil) -> [String] {
        guard let vault else { return [] }
        // The daemon this command started exited at once: its log says why.
        if let why = DaemonClient.startFailure { return ["its daemon did not start: \(why)"] }
        let named = vault == Paths.canonical(Paths.defaultVault()) ? "" : " \(vault)"
        switch status {
        case .interactionNotAllowed:
            // Also a presence-gated item with no approval program: only a lock is named.
            guard let client = try? DaemonClient.connect(vaultPath: vault), let status = try? client.status(), status.isLocked
            else { return [] }
            return ["the vault is locked: run keychainfs unlock-keychain" + named]
        case .notAvailable:
            return ["no vault daemon for \(vault)"]
        case .noSuchKeychain:
            let path = DaemonClient.missingVault ?? vault
            let again = path == Paths.canonical(Paths.defaultVault()) ? "" : " \(path)"
            if verb == "delete-keychain" { return ["no vault at \(path)"] }
            return ["no vault at \(path): create one with keychainfs create-keychain\(again)"
                    + (again.isEmpty ? " (or name yours: the last argument, or KEYCHAINFS_VAULT)" : "")]
        case .authFailed:
            let who = administrators(of: vault)
            if verb == "lock-keychain" {
                return ["you may not lock \(vault): locking it is for \(who), and members of an access group "
                        + "its owner lets lock it (keychainfs group set GROUP --may-lock)"]
            }
            if verb == "audit" {
                return ["you may not read or check the audit log of \(vault): it is for \(who); reading it also for members "
                        + "of an access group its owner grants it (keychainfs group set GROUP --may-audit)"]
            }
            if let verb, administration.contains(verb) {
                return ["you may not run \(verb) on \(vault): that is for \(who)"]
            }
            return []
        default:
            return []
        }
    }

    /// Who administers `vault`: `root`, or `its owner (NAME) and root`.
    static func administrators(of vault: String) -> String {
        let uid = Paths.vaultOwner(vault)
        guard uid != 0 else { return "root" }
        return "its owner (\(UserDatabase.userName(of: uid) ?? "uid \(uid)")) and root"
    }
}
