import KeychainCLI
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import KeychainSystem
import KeychainTPM

/// The bodies of `device-key` and of `create-keychain --device-key tpm2` (declared in KeychainCLI).
enum DeviceKeyVerb {
    static let run: VerbBody = { ctx in
        guard let sub = ctx.args.positionals.first else { throw UsageError("device-key needs seal, reseal, status or forget") }
        guard ctx.args.positionals.count <= 2 else { throw UsageError("too many arguments") }
        let vault = ctx.args.positionals.count == 2 ? ctx.vault : Paths.canonical(Paths.defaultVault())
        let pcrs = try pcrList(ctx)
        do {
            switch sub {
            case "seal": return try seal(ctx, vault: vault, pcrs: pcrs ?? [])
            case "reseal": return try reseal(ctx, vault: vault, pcrs: pcrs)
            case "status": return try status(ctx, vault: vault)
            case "forget": return try forget(ctx, vault: vault)
            default: throw UsageError("unknown device-key command \(sub)")
            }
        } catch let e as DeviceKeyError {
            throw StateError(message: e.description, status: e.status)
        } catch let e as TPMError {
            throw StateError(message: "\(e)", status: e.status)
        }
    }

    /// `--tpm-pcrs`, or nil when absent. - Throws: `UsageError` for a malformed list.
    static func pcrList(_ ctx: Context) throws -> [Int]? {
        guard let text = ctx.args.value("--tpm-pcrs") else { return nil }
        guard let list = SealedKey.pcrList(text) else {
            throw UsageError("--tpm-pcrs takes PCR numbers 0-23 separated by commas, such as 7 or 0,2,7, or none")
        }
        if let refusal = SealedKey.refusal(of: list) { throw UsageError(refusal) }
        return list
    }

    static let survivalWarning = "ThisDeviceOnly items are bound to this TPM: they do not survive a TPM clear, "
        + "a new machine or a lost sealed key file, and backups do not hold them (as on Apple's devices)"

    /// Replaces the plain key file with the same key sealed by the TPM.
    static func seal(_ ctx: Context, vault path: String, pcrs: [Int]) throws -> Int32 {
        let keyPath = DeviceKey.defaultPath()
        switch try DeviceKeyStore.read(at: keyPath) {
        case .missing: throw StateError(message: "no device key at \(keyPath)", status: .itemNotFound)
        case .sealed: throw StateError(message: "\(keyPath) is already sealed by the TPM; use `keychainfs device-key reseal`", status: .duplicateItem)
        case .plain: break
        }
        let key = try DeviceKey.loadOrCreate(at: keyPath)
        let vault = try Vault.open(at: path, deviceKey: key)
        guard vault.wasMade(with: key) else {
            throw StateError(message: "\(path) was not made with the device key at \(keyPath); nothing was changed", status: .param)
        }
        let tpm = try TPM()
        let recovery = pcrs.isEmpty ? nil : try recoverySecret(ctx, vault: vault)
        defer { recovery?.wipe() }
        Terminal.warn(survivalWarning)
        let sealed = try tpm.seal(key.key, pcrs: pcrs, recoveryAuth: recovery)
        try DeviceKeyStore.install(sealed, expected: key, with: tpm, at: keyPath)
        try vault.setSetting(Vault.deviceKeyKindSetting, Array("tpm2".utf8))
        Terminal.writeString(1, "sealed \(keyPath) by the TPM\(describe(pcrs))\n")
        return 0
    }

    /// Seals the key again to the PCRs' current values; the passphrase opens the recovery copy
    /// when the key no longer unseals, and authorises the new recovery copy.
    static func reseal(_ ctx: Context, vault path: String, pcrs requested: [Int]?) throws -> Int32 {
        let keyPath = DeviceKey.defaultPath()
        guard case .sealed(let old) = try DeviceKeyStore.read(at: keyPath) else {
            throw StateError(message: "\(keyPath) is not sealed by the TPM; use `keychainfs device-key seal`", status: .param)
        }
        let pcrs = requested ?? old.pcrs
        let tpm = try TPM()
        var key: DeviceKey?
        do { key = try DeviceKeyStore.deviceKey(unsealed: try tpm.unseal(old), path: keyPath) } catch TPMError.pcrMismatch(_) where old.hasRecoveryCopy {}
        let vault = try Vault.open(at: path, deviceKey: try key ?? DeviceKey(key: .random(count: DeviceKey.length)))
        var recovery: SecureBytes?
        defer { recovery?.wipe() }
        if key == nil || !pcrs.isEmpty {
            let auth = try recoverySecret(ctx, vault: vault)
            if key == nil { key = try DeviceKeyStore.deviceKey(unsealed: try tpm.unsealRecovery(old, auth: auth), path: keyPath) }
            recovery = auth
        }
        guard let key, vault.wasMade(with: key) else {
            throw StateError(message: "\(path) was not made with the device key at \(keyPath); nothing was changed", status: .param)
        }
        // Under the storage root key the old file names (when it names one): the one it unsealed under.
        let sealed = try tpm.seal(key.key, pcrs: pcrs, recoveryAuth: pcrs.isEmpty ? nil : recovery, under: old.rootName)
        try DeviceKeyStore.install(sealed, expected: key, with: tpm, at: keyPath)
        Terminal.writeString(1, "resealed \(keyPath) by the TPM\(describe(pcrs))\n")
        return 0
    }

    /// Gives up a sealed key this TPM cannot unseal (another TPM, a cleared one) or a missing
    /// one: the sealed file is moved aside (`PATH.unsealable`), the vault records a plain key,
    /// and its daemon makes a new one at the next start. The migratable items open again with
    /// the passphrase; the ThisDeviceOnly ones stay unreadable (`purge-other-device-items`
    /// deletes them). Asks first unless --yes is given.
    static func forget(_ ctx: Context, vault path: String) throws -> Int32 {
        let keyPath = DeviceKey.defaultPath()
        do {
            switch try DeviceKeyStore.read(at: keyPath) {
            case .plain: throw StateError(message: "\(keyPath) is a plain device key; there is nothing to forget", status: .param)
            case .sealed(let sealed):
                _ = try DeviceKeyStore.unseal(sealed, path: keyPath)
                throw StateError(message: "the TPM still unseals \(keyPath); nothing was changed", status: .param)
            case .missing: break
            }
        } catch let e as DeviceKeyError {
            // Only a key that is gone for good: another TPM's, a cleared TPM's, a damaged file.
            // No TPM reached (it may come back) or changed PCRs (reseal) are not that.
            guard e.status == .decode else { throw e }
        }
        let warning = "the ThisDeviceOnly items of \(path) will never open again (a new device key is made); "
            + "its other items open with the passphrase"
        if !ctx.args.has("--yes") {
            guard Terminal.stdinIsTerminal else { throw UsageError("device-key forget needs --yes when not on a terminal: \(warning)") }
            Terminal.warn(warning)
            let answer = try Terminal.prompt("Forget the device key? Type yes: ")
            guard answer.withUnsafeBytes({ Array($0) }) == Array("yes".utf8) else { throw KeychainStatus.userCanceled }
        }
        let vault = try Vault.open(at: path, deviceKey: try DeviceKey(key: .random(count: DeviceKey.length)))
        let aside = FileSystem.exists(keyPath) ? try moveAside(keyPath) : nil
        try vault.setSetting(Vault.deviceKeyKindSetting, Array("file".utf8))
        Terminal.writeString(1, "forgot the device key of \(path)" + (aside.map { " (moved to \($0))" } ?? "") + "\n")
        return 0
    }

    /// Moves `keyPath` to the first free name of `PATH.unsealable`, `PATH.unsealable.2`, ...
    /// (a hard link, which never replaces a file, then the unlink), and fsyncs the directory: an
    /// earlier forgotten key is never overwritten. - Returns: the new name.
    static func moveAside(_ keyPath: String) throws -> String {
        var reason = Errno.fileExists
        for n in 1...1000 {
            let aside = keyPath + ".unsealable" + (n == 1 ? "" : ".\(n)")
            do {
                try FileSystem.link(keyPath, as: aside)
                try? FileSystem.remove(keyPath)
                let dir = keyPath.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(keyPath[..<$0]) } ?? "."
                if let dfd = try? FileDescriptor.open(dir.isEmpty ? "/" : dir, .readOnly, options: .directory) {
                    try? dfd.sync()
                    try? dfd.close()
                }
                return aside
            } catch {
                reason = Errno(error)
            }
            guard reason == .fileExists else { break }
        }
        throw StateError(message: "cannot move \(keyPath) aside: \(reason)", status: .io)
    }

    /// Where the key is, and whether it can be had here. Exits with the failure's status when not.
    static func status(_ ctx: Context, vault path: String) throws -> Int32 {
        let keyPath = DeviceKey.defaultPath()
        var fields: [(String, String)] = [("path", quoted(keyPath))]
        var problem: DeviceKeyError?
        switch try DeviceKeyStore.read(at: keyPath) {
        case .missing: fields.append(("kind", quoted("missing")))
        case .plain: fields.append(("kind", quoted("file")))
        case .sealed(let sealed):
            fields += [("kind", quoted("tpm2")), ("pcrs", "[" + sealed.pcrs.map(String.init).joined(separator: ",") + "]"),
                       ("tcti", quoted(TPM.configuredTCTI ?? "default")), ("recovery", sealed.hasRecoveryCopy ? "true" : "false")]
            do {
                let key = try DeviceKeyStore.unseal(sealed, path: keyPath)
                fields.append(("unseals", "true"))
                if FileSystem.exists(path), let vault = try? Vault.open(at: path, deviceKey: key) {
                    fields.append(("vault-made-with-it", vault.wasMade(with: key) ? "true" : "false"))
                }
            } catch let e as DeviceKeyError {
                problem = e
                fields += [("unseals", "false"), ("error", quoted(e.description))]
            }
        }
        if let recorded = Vault.recordedDeviceKeyKind(at: path) { fields.append(("vault-records", quoted(recorded))) }
        if ctx.args.has("--json") {
            Terminal.writeString(1, "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}\n")
        } else {
            for (k, v) in fields { Terminal.writeString(1, "\(k): \(v)\n") }
        }
        return problem?.status.exitCode ?? 0
    }

    /// Unlocks `vault` with the passphrase (-p, standard input or a prompt) and derives the
    /// recovery copy's auth value from it.
    static func recoverySecret(_ ctx: Context, vault: Vault) throws -> SecureBytes {
        let pass = try Terminal.passphrase(ctx.args, prompt: "Passphrase for \(vault.path): ")
        defer { pass.wipe() }
        try vault.unlock(passphrase: pass)
        return try vault.deviceKeyRecoverySecret()
    }

    /// `create-keychain --device-key tpm2`: a new key sealed by the TPM (or the sealed one
    /// already there), never a plain one.
    static func createSealed(_ ctx: Context, passphrase: SecureBytes, kdf: KDFParameters) throws -> Vault {
        let pcrs = try pcrList(ctx) ?? []
        let keyPath = DeviceKey.defaultPath()
        do {
            let tpm = try TPM()
            switch try DeviceKeyStore.read(at: keyPath) {
            case .plain:
                throw StateError(message: "\(keyPath) holds a plain device key that this user's vaults share: "
                                 + "seal it with `keychainfs device-key seal` first", status: .duplicateItem)
            case .sealed(let sealed):
                let vault = try Vault.create(at: ctx.vault, passphrase: passphrase, kdf: kdf,
                                             deviceKey: try DeviceKeyStore.unseal(sealed, path: keyPath))
                try vault.setSetting(Vault.deviceKeyKindSetting, Array("tpm2".utf8))
                return vault
            case .missing:
                Terminal.warn(survivalWarning)
                let key = DeviceKey(key: try .random(count: DeviceKey.length))
                let vault = try Vault.create(at: ctx.vault, passphrase: passphrase, kdf: kdf, deviceKey: key)
                do {
                    let recovery = pcrs.isEmpty ? nil : try vault.deviceKeyRecoverySecret()
                    defer { recovery?.wipe() }
                    let sealed = try tpm.seal(key.key, pcrs: pcrs, recoveryAuth: recovery)
                    EngineVerbs.makeParentDirectory(keyPath)
                    try DeviceKeyStore.install(sealed, expected: key, with: tpm, at: keyPath)
                    try vault.setSetting(Vault.deviceKeyKindSetting, Array("tpm2".utf8))
                } catch {
                    for suffix in ["", "-wal", "-shm"] { try? FileSystem.remove(ctx.vault + suffix) }
                    throw error
                }
                return vault
            }
        } catch let e as DeviceKeyError {
            throw StateError(message: e.description, status: e.status)
        } catch let e as TPMError {
            throw StateError(message: "\(e)", status: e.status)
        }
    }

    static func describe(_ pcrs: [Int]) -> String {
        pcrs.isEmpty ? "" : ", bound to PCR " + pcrs.map(String.init).joined(separator: ",")
    }

    static func quoted(_ s: String) -> String { Output.jsonString(s) }
}
