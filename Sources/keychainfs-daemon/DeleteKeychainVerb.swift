import KeychainCLI
import KeychainCore
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// `delete-keychain`: the vault file and what belongs to it only, never a file that is not a
/// vault nor one a daemon has open.
enum DeleteKeychainVerb {
    static let run: VerbBody = { ctx in
        try ctx.checkPositionals()
        let vault = ctx.vault
        try Vault.checkIsVault(at: vault)
        // Every daemon holds a lock on the vault file for its life (VaultClaim), whatever its
        // runtime directory; holding it here also keeps one from starting while we delete.
        guard let fd = try? FileDescriptor.open(vault, .readOnly) else { throw VaultFileError.io }
        defer { try? fd.close() }
        guard (try? fd.tryLockExclusive()) == true else {
            throw StateError(message: "a daemon serves \(vault): run keychainfs stop \(vault) first", status: .interactionNotAllowed)
        }
        if !ctx.args.has("--yes") {
            guard Terminal.stdinIsTerminal else { throw UsageError("delete-keychain needs --yes when not on a terminal") }
            let answer = try Terminal.prompt("Delete \(vault), its audit log and every item in it? Type yes: ")
            guard answer.withUnsafeBytes({ Array($0) }) == Array("yes".utf8) else { throw KeychainStatus.userCanceled }
        }
        var files = [vault, vault + "-wal", vault + "-shm", vault + ".audit", Paths.lockoutFile(forVault: vault)]
        var n = 1
        while FileSystem.exists("\(vault).audit.\(n)") { files.append("\(vault).audit.\(n)"); n += 1 }
        for f in files { try? FileSystem.remove(f) }
        return 0
    }
}
