import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol
import KeychainSystem

enum VaultVerbs {
    static let all: [Verb] = [create, unlock, lock, info, settings, password, status, daemon, stop]

    static let create = Verb(
        name: "create-keychain", usage: "[-p PASSPHRASE] [--kdf interactive|moderate|sensitive] [--no-passphrase] [--quiet] [--device-key file|tpm2 [--tpm-pcrs LIST]] [VAULT]",
        summary: "Create a vault (alias: init), start its daemon and leave it unlocked.",
        valued: ["-p", "--kdf", "--device-key", "--tpm-pcrs"], flags: ["--no-passphrase", "--quiet"],
        details: """
        The passphrase is read from standard input when it is not a terminal, else asked twice.
        --kdf sets the Argon2id cost (default moderate: 3 passes, 256 MiB; sensitive, 1 GiB, takes
        seconds and says so on a terminal unless --quiet is given). The vault gets one
        access group, "default", owned by the caller with mode 0400.
        --device-key tpm2 seals a new device key by the TPM ($KEYCHAINFS_TCTI), bound to the
        SHA-256 PCRs in --tpm-pcrs (such as 7) when given; see `keychainfs help device-key`.
        """
    )  // body: keychainfs-daemon (it writes the vault file)

    static let unlock = Verb(
        name: "unlock-keychain", usage: "[-u] [-p PASSPHRASE] [--pinentry [PROGRAM]] [--quiet] [VAULT]",
        summary: "Unlock a vault: its daemon keeps the keys until lock-keychain or the idle timeout.",
        valued: ["-p"], flags: ["-u", "--quiet"], optionalProgram: ["--pinentry"],
        details: """
        The passphrase comes from standard input when it is not a terminal, else a prompt without echo.
        -u takes no passphrase from -p or standard input: it is asked for on the terminal (/dev/tty),
        as security -u leaves the asking to the system; with no terminal it exits 36.
        --pinentry asks with a pinentry program (GnuPG's Assuan protocol: pinentry-curses, -tty,
        -gnome3): PROGRAM (a path, or a name on PATH) when an argument follows that is not an
        option and not an existing file other than a program (a vault), else `pinentry`; a text pinentry asks on this terminal, else on $GPG_TTY. With the vault's
        setting (set-keychain-settings --pinentry) the pinentry asks instead of the terminal
        prompt, and when standard input is not a terminal and gives no passphrase (/dev/null).
        A missing, refusing or broken pinentry exits 36; a cancelled one 128.
        After failed attempts the daemon delays the next one (1 s, 2 s, 4 s, ... up to 60 s), across restarts.
        On a terminal a line on standard error says so, and that a sensitive key derivation is
        running; --quiet leaves it out (nothing is printed when standard error is not a terminal).
        """
    ) { ctx in
        try ctx.checkPositionals()
        if ctx.args.has("-u") && ctx.args.has("-p") { throw UsageError("-u takes no passphrase: give -u or -p") }
        if ctx.args.has("--pinentry") && (ctx.args.has("-u") || ctx.args.has("-p")) {
            throw UsageError("--pinentry asks with a pinentry program: give it without -u or -p")
        }
        let client = try ctx.client()
        // The vault's setting, asked for only where a prompt would be.
        func configuredPinentry() -> String? {
            guard let program = (try? client.status())?.pinentry else { return nil }
            guard Pinentry.mayRunSetting(program) else {
                Terminal.writeString(2, "keychainfs: not running the vault's pinentry \(program): it is not owned by root or you, or others may change it; give --pinentry to choose one\n")
                return nil
            }
            return program
        }
        let pass: SecureBytes
        if ctx.args.has("--pinentry") {
            pass = try PinentryPrompt.passphrase(program: ctx.args.value("--pinentry") ?? Pinentry.defaultProgram, vault: ctx.vault)
        } else if !ctx.args.has("-u"), !ctx.args.has("-p"), let program = configuredPinentry() {
            if !Terminal.stdinIsTerminal, let line = try Terminal.readLine(0) {
                pass = line  // a script's passphrase on standard input still counts
            } else {
                pass = try PinentryPrompt.passphrase(program: program, vault: ctx.vault)
            }
        } else if ctx.args.has("-u") {
            guard Terminal.hasTerminal else {
                let status = KeychainStatus.interactionNotAllowed
                throw StateError(message: status.message + "\nkeychainfs: -u asks for the passphrase on the terminal, and there is none", status: status)
            }
            pass = try Terminal.prompt("Passphrase for \(ctx.vault): ")
        } else {
            pass = try Terminal.passphrase(ctx.args, prompt: "Passphrase for \(ctx.vault): ")
        }
        if Progress.enabled(ctx.args) {
            let wait = Progress.backOffSeconds(vault: ctx.vault)
            if wait > 0 { Progress.say(ctx.args, "waiting \(wait) s after failed unlock attempts...") }
            if let mem = try? client.status().kdfMem, mem >= Progress.slowKDFBytes {
                Progress.say(ctx.args, "deriving the key from the passphrase (Argon2id, \(mem >> 20) MiB)...")
            }
        }
        try client.send(UnlockRequest.passphrase(pass).request)
        return 0
    }

    static let lock = Verb(
        name: "lock-keychain", usage: "[-a] [VAULT]",
        summary: "Lock a vault: WhenUnlocked items become unreadable until the next unlock.",
        flags: ["-a"],
        details: """
        -a locks every vault whose daemon runs as you (or root) in your runtime directory (that of
        the default vault: $KEYCHAINFS_RUNTIME_DIR, else /tmp/keychainfs-UID), the default vault's
        among them; it starts no daemon, and a vault without one is locked already.
        """
    ) { ctx in
        try ctx.checkPositionals()
        guard ctx.args.has("-a") else {
            try ctx.client().send(Request(.lock))
            return 0
        }
        guard ctx.args.positionals.isEmpty else { throw UsageError("-a locks every vault; give it without VAULT") }
        var failure: Error?
        let defaultVault = Paths.canonical(Paths.defaultVault())
        // The default vault's socket too, should its daemon serve from another directory
        // (`/run/user/UID/keychainfs` when /tmp's name was taken).
        let sockets = Set(LockAll.sockets(in: Paths.runtimeDirectory(forVault: defaultVault)) + [Paths.socket(forVault: defaultVault)])
        for socket in sockets.sorted() {
            do { try DaemonClient.connect(socketPath: socket).send(Request(.lock)) }
            catch KeychainStatus.notAvailable { continue }  // a stale socket: nothing serves it
            catch KeychainStatus.authFailed {
                failure = StateError.explained(.authFailed, "you may not lock the vault whose daemon listens at \(socket): "
                                               + "locking it is for its owner, root, and members of an access group its owner lets lock it")
            } catch { failure = error }
        }
        if let failure { throw failure }
        return 0
    }

    static let info = Verb(
        name: "show-keychain-info", usage: "[--json] [VAULT]",
        summary: "Show the lock state, idle timeout, KDF cost and item counts of a vault."
    ) { ctx in
        try ctx.checkPositionals()
        let i = try ctx.client().status()
        if ctx.json { Terminal.writeString(1, Output.jsonShaped(i.fields) + "\n"); return 0 }
        var out = "Keychain \"\(ctx.vault)\" \(i.state)"
        let timeout = i.lockTimeout ?? 0
        out += timeout > 0 ? " timeout=\(timeout)s" : " no-timeout"
        out += "\n"
        if let n = i.items { out += "items: \(n)" + (i.itemsScope == "groups" ? " (in your access groups)" : "") + "\n" }
        for p in ProtectionClass.allCases {
            if let n = i.itemsByProtection[p.rawValue], n > 0 { out += "  \(p.rawValue) (\(p.appleName)): \(n)\n" }
        }
        if let n = i.otherDevice, n > 0 { out += "bound to another device: \(n) (never readable here)\n" }
        if let ops = i.kdfOps, let mem = i.kdfMem {
            out += "kdf: argon2id, \(ops) passes, \(mem >> 20) MiB\n"
        }
        out += "your access groups: \(i.groups.isEmpty ? "(none)" : i.groups.joined(separator: ","))\n"
        Terminal.writeString(1, out)
        return 0
    }

    static let settings = Verb(
        name: "set-keychain-settings",
        usage: "[-l] [-u] [-t SECONDS] [--approval-program PATH] [--approval-timeout SECONDS] [--approval-remember SECONDS] [--audit-max-size BYTES] [--pinentry PROGRAM] [VAULT]",
        summary: "Lock the vault after SECONDS without requests (without -t: never); set the approval program.",
        valued: ["-t", "--approval-program", "--approval-timeout", "--approval-remember", "--audit-max-size", "--pinentry"],
        flags: ["-l", "-u"],
        details: """
        -u (lock after the timeout) is implied by -t, as in security; without -t there is no
        timeout. -l (lock when the system sleeps) is accepted and has no effect here: keychainfs
        does not watch for suspend (a warning says so).
        The approval program confirms presence for items whose access control asks for it
        (userPresence, biometry, watch, devicePasscode): it is run as
        PROGRAM --reason presence|passphrase --label LABEL --uid UID --pid PID --exe EXE;
        exit 0 approves. For `passphrase` it prints the vault passphrase on its first line.
        An empty PATH removes it. --approval-timeout (default 30, 1 to 3600) bounds each run;
        --approval-remember (0 to 86400) keeps an approval per program and item for that many
        seconds. -t takes 0 to 31536000 (365 days). --audit-max-size rotates the audit log once its
        file reaches BYTES (4096 to 1099511627776; 0 never rotates, the default).
        --pinentry PROGRAM (a path, or a name on PATH, stored as its absolute path; "" removes it)
        makes unlock prompts ask with that pinentry: unlock-keychain's (see its help) and the
        Secret Service's Prompt, which the provider runs with its session's display and bus.
        """
    ) { ctx in
        try ctx.checkPositionals()
        if ctx.args.has("-l") { Terminal.warn("-l (lock when the system sleeps) has no effect here: keychainfs does not watch for suspend") }
        var change = SettingsChange()
        let approvalFlags = ["--approval-program", "--approval-timeout", "--approval-remember", "--audit-max-size", "--pinentry"]
        if let n = try ctx.args.number("-t", in: SettingLimits.lockTimeout, unit: "a number of seconds") {
            change.lockTimeout = n
        } else if !approvalFlags.contains(where: ctx.args.has) {
            change.lockTimeout = 0  // as security: no -t means no timeout
        }
        if let p = ctx.args.value("--approval-program") {
            let program = p.isEmpty ? "" : Paths.canonical(p)
            // A program that cannot run would deny every gated read later, far from the cause.
            guard program.isEmpty || (try? FileSystem.status(of: program))?.isExecutableFile == true else {
                throw UsageError("--approval-program takes an executable file (or \"\" to remove it); \(Output.jsonString(p)) is not one")
            }
            change.approvalProgram = program
        }
        if let p = ctx.args.value("--pinentry") {
            guard p.isEmpty || Pinentry.locate(p) != nil else {
                throw UsageError("--pinentry takes a pinentry program (a path, or a name on PATH; \"\" removes it); \(Output.jsonString(p)) is not one")
            }
            change.pinentry = p.isEmpty ? "" : Pinentry.locate(p)!
        }
        change.approvalTimeout = try ctx.args.number("--approval-timeout", in: SettingLimits.approvalTimeout, unit: "a number of seconds")
        change.approvalRemember = try ctx.args.number("--approval-remember", in: SettingLimits.approvalRemember, unit: "a number of seconds")
        if let text = ctx.args.value("--audit-max-size") {
            // 0, or a size a rotation's own line cannot fill.
            change.auditMaxSize = (text == "0" ? 0 : try Arguments.number(
                text, flag: "--audit-max-size", in: SettingLimits.auditMaxSize, unit: "0 or a number of bytes"))
        }
        try ctx.client().send(change.request)
        return 0
    }

    static let password = Verb(
        name: "set-keychain-password", usage: "[-o OLD] [-p NEW] [--kdf PRESET] [--remove-passphrase --yes] [--quiet] [VAULT]",
        summary: "Change the vault passphrase (re-wraps the class keys only).",
        valued: ["-o", "-p", "--kdf"], flags: ["--remove-passphrase", "--yes", "--quiet"],
        details: """
        Without -o/-p the old and new passphrases are read as two lines of standard input, or asked
        for on the terminal. --remove-passphrase leaves the vault without one and deletes every
        WhenPasscodeSetThisDeviceOnly item, as Apple does; it asks first unless --yes is given.
        A sensitive key derivation (the vault's or --kdf's) is announced on a terminal unless --quiet.
        """
    ) { ctx in
        try ctx.checkPositionals()
        let kdf = ctx.args.value("--kdf")
        if let k = kdf, KDFParameters(presetName: k) == nil { throw UsageError("--kdf takes interactive, moderate or sensitive") }
        let client = try ctx.client()
        let old = try Terminal.passphrase(ctx.args, flag: "-o", prompt: "Old passphrase: ")
        let new: SecureBytes
        if ctx.args.has("--remove-passphrase") {
            if !ctx.args.has("--yes") {
                guard Terminal.stdinIsTerminal else { throw UsageError("--remove-passphrase needs --yes when not on a terminal") }
                let answer = try Terminal.prompt("Remove the passphrase and delete WhenPasscodeSet items? Type yes: ")
                guard answer.withUnsafeBytes({ Array($0) }) == Array("yes".utf8) else { throw KeychainStatus.userCanceled }
            }
            new = try SecureBytes(count: 0)
        } else {
            new = try Terminal.passphrase(ctx.args, flag: "-p", prompt: "New passphrase: ")
            guard new.count > 0 else { throw UsageError("the new passphrase is empty; use --remove-passphrase") }
        }
        if Progress.enabled(ctx.args) {
            var current: Int64 = 0
            if let mem = try? client.status().kdfMem { current = mem }
            if ctx.args.value("--kdf") == "sensitive" || current >= Progress.slowKDFBytes {
                Progress.say(ctx.args, "deriving keys from the passphrases (Argon2id, up to 1024 MiB)...")
            }
        }
        let n = try client.call(PassphraseChange(old: old, new: new, kdf: kdf), PassphraseChanged.self).deleted
        if n > 0 { Terminal.writeString(2, "deleted \(n) WhenPasscodeSetThisDeviceOnly item(s)\n") }
        return 0
    }

    static let status = Verb(
        name: "status", usage: "[--json] [VAULT]",
        summary: "Say whether a daemon serves the vault, and its state; never starts one."
    ) { ctx in
        try ctx.checkPositionals()
        let client: DaemonClient
        do { client = try DaemonClient.connect(vaultPath: ctx.vault) } catch KeychainStatus.notAvailable {
            // The mounts a killed daemon left behind, dead until replaced or unmounted; and those
            // a stop took down, which the next daemon mounts again.
            let records = MountRecord.read(Paths.mountRecords(forVault: ctx.vault))
            let stale = records.map(\.mountpoint).filter { MountTable.isMounted($0) && MountTable.isDead($0) }
            let stopped = records.filter { $0.stopped && !stale.contains($0.mountpoint) }.map(\.mountpoint)
            if ctx.json {
                func list(_ points: [String]) -> String { "[" + points.map(Output.jsonString).joined(separator: ",") + "]" }
                Terminal.writeString(1, "{\"vault\":\(Output.jsonString(ctx.vault)),\"daemon\":false,\"stale-mounts\":\(list(stale)),"
                                     + "\"stopped-mounts\":\(list(stopped))}\n")
            } else {
                Terminal.writeString(1, "\(ctx.vault): no daemon running\n" + stale.map { "  mount: \($0) (stale)\n" }.joined()
                                     + stopped.map { "  mount: \($0) (stopped: the next daemon mounts it again)\n" }.joined())
            }
            return 0
        }
        let i = try client.status()
        if ctx.json {
            var all = i.fields
            all["daemon"] = .bool(true)
            Terminal.writeString(1, Output.jsonShaped(all) + "\n")
        } else {
            var out = "\(ctx.vault): daemon pid \(i.pid), \(i.state), socket \(Paths.socket(forVault: ctx.vault))\n"
            if let n = i.locksIn { out += "  idle lock in \(n) s\n" }
            if let n = i.items {
                let counts = ProtectionClass.allCases.compactMap { p -> String? in
                    guard let c = i.itemsByProtection[p.rawValue], c > 0 else { return nil }
                    return "\(p.rawValue) \(c)"
                }
                out += "  items: \(n)" + (counts.isEmpty ? "" : " (" + counts.joined(separator: ", ") + ")")
                    + (i.itemsScope == "groups" ? " in your access groups" : "") + "\n"
            }
            for line in i.mounts ?? [] { out += "  mount: \(line)\n" }
            if let n = i.auditLines, let h = i.auditHead {
                out += "  audit log: \(n) entries, head \(h.prefix(16))\n"
            }
            Terminal.writeString(1, out)
        }
        return 0
    }

    static let daemon = Verb(
        name: "daemon", usage: "[VAULT]",
        summary: "Run the vault's daemon in the foreground (for systemd); logs go to standard error."
    )  // body: keychainfs-daemon

    static let stop = Verb(
        name: "stop", usage: "[VAULT]",
        summary: "Stop the vault's daemon; every class key it held is wiped.",
        details: """
        Its mounts are taken down and recorded: the vault's next daemon (the next command that
        needs one starts it) mounts them again, unless `keychainfs unmount MOUNTPOINT` forgets
        one first. `status` lists them meanwhile.
        """
    ) { ctx in
        try ctx.checkPositionals()
        let client: DaemonClient
        do { client = try DaemonClient.connect(vaultPath: ctx.vault) } catch KeychainStatus.notAvailable { return 0 }
        try client.send(Request(.stop))
        // Wait until the daemon has exited (its lock is free), so a following command starts a
        // fresh one.
        if let lock = try? FileDescriptor.open(Paths.socket(forVault: ctx.vault) + ".lock", .readOnly, options: .noFollow) {
            defer { try? lock.close() }
            for _ in 0..<300 {
                if (try? lock.tryLockShared()) == true { try? lock.unlock(); break }
                SystemClock.sleep(microseconds: 10_000)
            }
        }
        return 0
    }
}
