import KeychainCLI
import KeychainCore
import KeychainCrypto
import KeychainDaemon
import KeychainfsAccess
import KeychainProtocol
import KeychainSystem

/// The bodies of `create-keychain` and `daemon` (declared, with their help, in KeychainCLI).
enum EngineVerbs {
    /// Writes the vault file, then starts its daemon and unlocks it with the same passphrase.
    static let create: VerbBody = { ctx in
        try ctx.checkPositionals()
        var kdf = KDFParameters.moderate
        if let name = ctx.args.value("--kdf") {
            guard let p = KDFParameters(presetName: name) else { throw UsageError("--kdf takes interactive, moderate or sensitive") }
            kdf = p
        }
        let pass: SecureBytes
        if ctx.args.has("--no-passphrase") {
            pass = try SecureBytes(count: 0)
        } else if ctx.args.value("-p") == nil && Terminal.stdinIsTerminal {
            pass = try Terminal.prompt("New passphrase for \(ctx.vault): ")
            let again = try Terminal.prompt("Repeat passphrase: ")
            guard pass.constantTimeEquals(again) else { throw UsageError("the passphrases differ") }
        } else {
            pass = try Terminal.passphrase(ctx.args, prompt: "")
        }
        let deviceKind = ctx.args.value("--device-key") ?? "file"
        guard deviceKind == "file" || deviceKind == "tpm2" else { throw UsageError("--device-key takes file or tpm2") }
        guard deviceKind == "tpm2" || !ctx.args.has("--tpm-pcrs") else { throw UsageError("--tpm-pcrs needs --device-key tpm2") }
        makeParentDirectory(ctx.vault)
        if kdf.memLimit >= UInt64(Progress.slowKDFBytes) {  // derived twice: to create, then to unlock
            Progress.say(ctx.args, "deriving the key from the passphrase twice (Argon2id, \(kdf.opsLimit) passes, \(kdf.memLimit >> 20) MiB); this takes a while...")
        }
        let vault = deviceKind == "tpm2" ? try DeviceKeyVerb.createSealed(ctx, passphrase: pass, kdf: kdf)
            : try Vault.create(at: ctx.vault, passphrase: pass, kdf: kdf, deviceKey: try DeviceKey.loadOrCreate())
        try AccessGroupTable(groups: [AccessGroup(name: "default", owner: CurrentProcess.userID, gid: CurrentProcess.groupID)]).save(to: vault)
        withExtendedLifetime(vault) {}
        // Start the daemon and hand it the passphrase while we still hold it.
        try ctx.client().send(UnlockRequest.passphrase(pass).request)
        Terminal.writeString(1, "created \(ctx.vault)\n")
        return 0
    }

    /// The daemon in the foreground, logging to standard error.
    static let daemon: VerbBody = { ctx in
        try ctx.checkPositionals()
        return Daemon.run(vaultPath: ctx.vault) { line in Terminal.writeString(2, "keychainfs-daemon: \(line)\n") }
    }

    /// Makes the directories above a new vault (0700), as `mkdir -p` would.
    static func makeParentDirectory(_ path: String) {
        let bytes = Array(path.utf8)
        for (i, c) in bytes.enumerated() where c == UInt8(ascii: "/") && i > 0 {
            try? FileSystem.createDirectory(String(decoding: bytes[0..<i], as: UTF8.self),
                                            permissions: [.ownerRead, .ownerWrite, .ownerExecute])
        }
    }
}
