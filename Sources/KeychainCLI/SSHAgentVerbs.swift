import KeychainAgent
import KeychainClient
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// `keychainfs ssh-agent` and `ssh-public-key`: the vault's keys for OpenSSH (docs/ssh-agent.md).
enum SSHAgentVerbs {
    static let all: [Verb] = [agent, publicKey, generateKey]

    static let agent = Verb(
        name: "ssh-agent", usage: "[-a SOCKET] [-D] [-c | -s] [-k] [--extractable] [--delete-removed] [VAULT]",
        summary: "Serve the vault's private keys to ssh, ssh-add and git as an OpenSSH agent.",
        valued: ["-a"], flags: ["-D", "-c", "-s", "-k", "--extractable", "--delete-removed"],
        details: """
        Listens on SOCKET (default $XDG_RUNTIME_DIR/keychainfs/ssh-agent.sock; its directory is
        made 0700 and must be yours) and prints the shell lines that point ssh at it, as
        ssh-agent does: eval "$(keychainfs ssh-agent)". The agent then runs in the background.
          -a SOCKET  listen here instead
          -D         stay in the foreground (for systemd and scripts); still prints the lines
          -c, -s     print csh or Bourne shell lines (default: csh when $SHELL ends in csh)
          -k         end the agent named by $SSH_AGENT_PID and print the lines that unset it
          --extractable  store keys given with ssh-add extractable (export and the mount's
                     /.keys can then give them out); by default they are not
          --delete-removed  ssh-add -d and -D delete the keys from the vault (-D: every key
                     this agent offers); by default they only leave this agent's list
        The agent holds no key. It offers the private keys (Ed25519, ECDSA P-256/384/521, RSA) of
        the access groups you may use, named by their labels, and each signature is made and
        audited by the daemon; RSA signs with SHA-2 only. Keys of a locked vault's WhenUnlocked
        classes are not offered and do not sign. `ssh-add -d`/`-D` take keys off the agent's list
        (not out of the vault) until it restarts; `ssh-add -x`/`-X` lock and unlock the agent.
        Only your own processes (and root's) are served.
        """
    ) { try runAgent($0) }

    static let publicKey = Verb(
        name: "ssh-public-key", usage: "[LABEL] [-k VAULT]",
        summary: "Print the authorized_keys line of the vault's signing keys (those labelled LABEL).",
        valued: ["-k"],
        details: """
        One line per private key the agent would offer: `TYPE BASE64 LABEL`, for
        ~/.ssh/authorized_keys or a known_hosts entry. Exits 44 when no key matches.
        """
    ) { try runPublicKey($0) }

    static let generateKey = Verb(
        name: "generate-key", usage: "-t ed25519|ecdsa|rsa [-b BITS] [--tpm] -l LABEL [--ssh] [--access-group G] [VAULT]",
        summary: "Make a private key in the daemon (or in the TPM) that never leaves the keychain.",
        valued: ["-t", "-b", "-l", "--access-group"], flags: ["--tpm", "--ssh"],
        details: """
        The key is made by the daemon and stored as a non-extractable private key that may sign
        (as SecKeyCreateRandomKey with kSecAttrIsPermanent does): the agent offers it, SecKey
        signs with it, and nothing gives its bytes out.
          -t TYPE    ed25519, ecdsa (P-256, P-384 or P-521 by -b; default 256) or rsa (-b 1024
                     to 4096 in whole bytes; default 3072)
          --tpm      made inside the TPM (ecdsa P-256 only), as a Secure Enclave key, bound to
                     this machine (WhenUnlockedThisDeviceOnly); docs/tpm.md
          -l LABEL   its label: the comment ssh-add -l shows
          --ssh      print its authorized_keys line (TYPE BASE64 LABEL), as ssh-keygen's .pub
          --access-group G   one of your entitled access groups (default: your first)
        """
    ) { try runGenerateKey($0) }

    static func runGenerateKey(_ ctx: Context) throws -> Int32 {
        try ctx.checkPositionals()
        guard let label = ctx.args.value("-l"), !label.isEmpty else { throw UsageError("generate-key needs -l LABEL") }
        let bits = try ctx.args.value("-b").map { text -> Int64 in
            guard let n = Int64(text), n > 0 else { throw UsageError("-b takes a number of bits") }
            return n
        }
        var attributes: Attributes = [
            .class: .itemClass(.key), .keyClass: .number(1), .label: .string(label),
            .isExtractable: .bool(false), .neverExtractable: .bool(true), .canSign: .bool(true), .canDecrypt: .bool(false),
            .returnAttributes: .bool(true), .returnPersistentRef: .bool(true),
        ]
        switch ctx.args.value("-t") {
        case "ed25519"?:
            guard bits == nil || bits == 256 else { throw UsageError("an Ed25519 key has 256 bits") }
            attributes[.keyType] = .number(2_147_509_167)  // KeychainKeys' AsymmetricKey.ed25519TypeCode
        case "ecdsa"?:
            guard [256, 384, 521].contains(bits ?? 256) else { throw UsageError("-b takes 256, 384 or 521 for ecdsa") }
            attributes[.keyType] = .number(73)
            attributes[.keySizeInBits] = .number(bits ?? 256)
        case "rsa"?:
            let size = bits ?? 3072
            guard (1024...4096).contains(size), size % 8 == 0 else {
                throw UsageError("-b takes 1024 to 4096 in whole bytes for rsa")
            }
            attributes[.keyType] = .number(42)
            attributes[.keySizeInBits] = .number(size)
        case let other:
            throw UsageError(other == nil ? "generate-key needs -t ed25519, ecdsa or rsa" : "-t takes ed25519, ecdsa or rsa")
        }
        if ctx.args.has("--tpm") {
            guard attributes[.keyType] == .number(73), bits ?? 256 == 256 else { throw UsageError("--tpm makes ecdsa P-256 keys only") }
            attributes[.tokenID] = .string(ValueName.tokenIDSecureEnclave)
        }
        if let group = ctx.args.value("--access-group") { attributes[.accessGroup] = .string(group) }
        let request = ItemAdd(attributes: attributes, generate: ctx.args.has("--tpm") ? nil : ItemAdd.privateKey)
        let result: QueryResult
        do {
            result = try ctx.client().call(request, ItemsReply.self).result
        } catch KeychainStatus.notAvailable where ctx.args.has("--tpm") {
            throw StateError(message: "no TPM answers the daemon of \(ctx.vault) (KEYCHAINFS_TCTI, docs/tpm.md)", status: .notAvailable)
        }
        guard ctx.args.has("--ssh") else { return 0 }
        guard case .value(.item(let item)) = result, let line = SSHPublicKeys.line(of: item) else { throw KeychainStatus.decode }
        Terminal.writeString(1, line + "\n")
        return 0
    }

    static func runAgent(_ ctx: Context) throws -> Int32 {
        try ctx.checkPositionals()
        let vault = ctx.vault
        let extractable = ctx.args.has("--extractable")
        let deletesRemoved = ctx.args.has("--delete-removed")
        if ctx.args.has("-k") { return try kill(ctx) }
        guard !(ctx.args.has("-c") && ctx.args.has("-s")) else { throw UsageError("-c and -s exclude each other") }
        let path: String
        do { path = try ctx.args.value("-a") ?? AgentSocket.defaultPath() } catch let e as AgentSetupError {
            throw StateError(message: e.description, status: .param)
        }
        if let passed = activationSocket() {
            // Started by systemd for its socket unit: it owns the socket file.
            try CurrentProcess.harden()
            try SSHAgentServer(listener: passed, storesExtractable: extractable, deletesRemoved: deletesRemoved, connect: { try Engine.connect(vault) }).run()
            return 0
        }
        if ctx.args.has("-D") {
            try CurrentProcess.harden()
            let listener: FileDescriptor
            do { listener = try AgentSocket.listen(at: path) } catch let e as AgentSetupError {
                throw StateError(message: e.description, status: .io)
            }
            TerminationSignals.handle { _ in
                try? FileSystem.remove(path)
                CurrentProcess.exit(0)
            }
            Terminal.writeString(1, shellLines(ctx, socket: path, pid: CurrentProcess.id))
            if CurrentProcess.environment(backgroundVariable) != nil {
                // Started by `ssh-agent` without -D: closing standard error tells it this agent
                // listens, and leaves nothing of the starter's open.
                let null = try FileDescriptor.open("/dev/null", .writeOnly)
                try null.duplicate(onto: 2)
                try? null.close()
            }
            try SSHAgentServer(listener: listener, storesExtractable: extractable, deletesRemoved: deletesRemoved, connect: { try Engine.connect(vault) }).run()
            return 0
        }
        let pid = try startInBackground(socket: path, vault: vault, options: (extractable ? ["--extractable"] : [])
                                            + (deletesRemoved ? ["--delete-removed"] : []))
        Terminal.writeString(1, shellLines(ctx, socket: path, pid: pid))
        return 0
    }

    /// The listening socket systemd passed (socket activation: `LISTEN_FDS=1` for this process,
    /// descriptor 3), or nil.
    private static func activationSocket() -> FileDescriptor? {
        guard CurrentProcess.environment("LISTEN_FDS") == "1",
              CurrentProcess.environment("LISTEN_PID") == String(CurrentProcess.id) else { return nil }
        return FileDescriptor(rawValue: 3)
    }

    /// Set in the environment of an agent started in the background.
    private static let backgroundVariable = "KEYCHAINFS_AGENT_BACKGROUND"

    /// Starts `keychainfs ssh-agent -D` in a session of its own and waits until it listens: it
    /// closes its standard error (a pipe to this process) once it does, or says there why not.
    private static func startInBackground(socket: String, vault: String, options: [String]) throws -> Int32 {
        var env = [backgroundVariable + "=1"]
        for name in ["PATH", "HOME", "XDG_RUNTIME_DIR", "KEYCHAINFS_RUNTIME_DIR", "KEYCHAINFS_VAULT", "KEYCHAINFS_DEVICE_KEY",
                     "KEYCHAINFS_TCTI"] {  // the agent may start the vault's daemon, which needs these
            if let v = CurrentProcess.environment(name) { env.append(name + "=" + v) }
        }
        let report = try FileDescriptor.pipe()
        defer { try? report.read.close() }
        let pid: Int32
        do {
            defer { try? report.write.close() }
            pid = try ChildProcess.spawn([selfExecutable(), "ssh-agent", "-D", "-a", socket] + options + [vault],
                                         environment: env,
                                         setup: [.open(0, path: "/dev/null", .readOnly), .open(1, path: "/dev/null", .writeOnly),
                                                 .duplicate(report.write, as: 2), .closeFrom(3)],
                                         newSession: true)
        }
        let said = (try? report.read.readToEnd(limit: 4096)) ?? []
        // Nothing said means it listens; a line means it ends, and says why.
        guard said.isEmpty, let probe = try? FileDescriptor.unixStreamSocket() else {
            let status = ChildProcess.waitForExit(pid).map(ChildProcess.exitCode) ?? 1
            let line = String(decoding: said, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? "exit \(status)"
            throw StateError(message: "the agent did not start: " + (line.hasPrefix("keychainfs: ") ? String(line.dropFirst(12)) : line), status: .io)
        }
        defer { try? probe.close() }
        guard (try? probe.connect(unixPath: socket)) != nil else {
            try? TerminationSignals.terminate(pid)
            let status = ChildProcess.waitForExit(pid).map(ChildProcess.exitCode) ?? 1
            throw StateError(message: "the agent did not start (exit \(status))", status: .io)
        }
        return pid
    }

    /// The lines `eval` runs: the socket and the agent's pid, in the shell's syntax.
    private static func shellLines(_ ctx: Context, socket: String, pid: Int32) -> String {
        if csh(ctx) {
            return "setenv SSH_AUTH_SOCK \(socket);\nsetenv SSH_AGENT_PID \(pid);\necho Agent pid \(pid);\n"
        }
        return "SSH_AUTH_SOCK=\(socket); export SSH_AUTH_SOCK;\nSSH_AGENT_PID=\(pid); export SSH_AGENT_PID;\necho Agent pid \(pid);\n"
    }

    private static func csh(_ ctx: Context) -> Bool {
        if ctx.args.has("-c") { return true }
        if ctx.args.has("-s") { return false }
        return CurrentProcess.environment("SHELL")?.hasSuffix("csh") ?? false
    }

    /// `-k`: SIGTERM to `$SSH_AGENT_PID`, then the lines that unset the variables.
    private static func kill(_ ctx: Context) throws -> Int32 {
        guard let value = CurrentProcess.environment("SSH_AGENT_PID"), let pid = Int32(value), pid > 0 else {
            throw StateError(message: "SSH_AGENT_PID is not set: no agent to end", status: .param)
        }
        do { try TerminationSignals.terminate(pid) } catch {
            throw StateError(message: "cannot end the agent (pid \(pid)): \(error)", status: .io)
        }
        let lines = csh(ctx)
            ? "unsetenv SSH_AUTH_SOCK;\nunsetenv SSH_AGENT_PID;\necho Agent pid \(pid) killed;\n"
            : "unset SSH_AUTH_SOCK;\nunset SSH_AGENT_PID;\necho Agent pid \(pid) killed;\n"
        Terminal.writeString(1, lines)
        return 0
    }

    static func runPublicKey(_ ctx: Context) throws -> Int32 {
        let positionals = ctx.args.positionals
        guard positionals.count <= 1 else { throw UsageError("ssh-public-key takes one LABEL") }
        let vault = Paths.canonical(ctx.args.value("-k") ?? Paths.defaultVault())
        let lines = try SSHPublicKeys.lines(label: positionals.first, connect: { try Engine.connect(vault) })
        guard !lines.isEmpty else { throw KeychainStatus.itemNotFound }
        Terminal.writeString(1, lines.joined(separator: "\n") + "\n")
        return 0
    }
}
