import KeychainClient
import KeychainCrypto
import KeychainModel

/// The vault's passphrase asked with the user's pinentry (`--pinentry [PROGRAM]`, or the vault's
/// `set-keychain-settings --pinentry` setting), for `unlock-keychain`.
enum PinentryPrompt {
    /// Runs `program` (a name on PATH or a path) and returns what the user typed, in guarded memory.
    /// - Throws: `StateError` that says what went wrong and what to do: interaction not allowed
    ///   (36) when the program is missing, refuses (no display, no terminal) or breaks the
    ///   protocol; user canceled (128) when the user cancelled or let it time out.
    static func passphrase(program: String, vault: String) throws -> SecureBytes {
        do {
            let pinentry = try Pinentry(program: program)
            return try pinentry.askPassphrase(title: "keychainfs", description: "Enter the passphrase to unlock the keychainfs vault\n\(vault)",
                                              prompt: "Passphrase:")
        } catch let failure as Pinentry.Failure {
            switch failure {
            case .notFound:
                throw StateError.explained(.interactionNotAllowed, failure.description
                                           + "; install one (apt-get install pinentry-curses, pinentry-tty or pinentry-gnome3) or name it: --pinentry PROGRAM")
            case .cancelled:
                throw StateError.explained(.userCanceled, failure.description + "; the vault stays locked")
            case .timedOut:
                throw StateError.explained(.userCanceled, failure.description + "; the vault stays locked")
            case .refused, .brokeProtocol:
                throw StateError.explained(.interactionNotAllowed, failure.description
                                           + " (\(program)); a text pinentry needs a terminal (GPG_TTY), a desktop one a display")
            }
        }
    }
}
