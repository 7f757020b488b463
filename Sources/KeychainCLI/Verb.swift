import KeychainClient
import KeychainModel
import KeychainSystem
import KeychainProtocol

/// What a verb does, given its parsed arguments; returns the exit status.
package typealias VerbBody = @Sendable (Context) throws -> Int32

/// One CLI verb: its options, its help, and what it does.
struct Verb: Sendable {
    let name: String
    let usage: String
    let summary: String
    var valued: Set<String> = []
    var flags: Set<String> = []
    var optionalValue: Set<String> = []
    /// Options whose optional value is a program (`--pinentry [PROGRAM]`): the next argument is
    /// taken unless it begins with `-` or is an existing file that is not executable (a vault),
    /// so `--pinentry VAULT` leaves VAULT to be the vault and a missing program is named as one.
    var optionalProgram: Set<String> = []
    var details: String = ""
    /// nil for a verb that needs the engine in-process: `keychainfs` hands the whole command
    /// line to `keychainfs-daemon` (`Engine`), which supplies the body.
    var body: VerbBody? = nil

    var help: String {
        "usage: keychainfs \(name) \(usage)\n\n\(summary)\n" + (details.isEmpty ? "" : "\n\(details)\n")
    }

    func run(_ raw: [String], body: VerbBody) throws -> Int32 {
        try body(Context(args: parse(raw)))
    }

    /// The verb's arguments parsed. - Throws: `UsageError`.
    func parse(_ raw: [String]) throws -> Arguments {
        let programs = optionalProgram
        return try Arguments(raw, valued: valued, flags: flags.union(["--json"]), optionalValue: optionalValue.union(programs)) { option, next in
            guard programs.contains(option) else { return true }
            if next.hasPrefix("-") { return false }
            guard let found = try? FileSystem.status(of: next) else { return true }
            return found.isExecutableFile
        }
    }

    static func named(_ name: String) -> Verb? {
        let canonical = name == "init" ? "create-keychain" : name
        return all.first { $0.name == canonical }
    }

    static var all: [Verb] { VaultVerbs.all + ItemVerbs.all + GroupVerbs.all + MountVerbs.all + AuditVerbs.all + VerifyVerbs.all + WatchVerbs.all + BackupVerbs.all + SyncVerbs.all + SecretServiceVerbs.all + SSHAgentVerbs.all + DeviceKeyVerbs.all + CertificateVerbs.all + KeychainListVerbs.all + PodmanSecretVerbs.all }
}

enum Help {
    /// The release and the formats this build speaks, for bug reports and mixed installs.
    static let release = Release.version
    static var version: String {
        "\(release) (socket protocol \(WireProtocol.version), backup format \(BackupFormat.currentVersion))"
    }

    static var overview: String {
        var out = "usage: keychainfs COMMAND [OPTIONS] [VAULT]\n\n\(introduction)\n\nCommands:\n"
        for v in Verb.all {
            let pad = String(repeating: " ", count: max(1, 26 - v.name.count))
            out += "    \(v.name)\(pad)\(v.summary)\n"
        }
        out += "\nExit status: \(exitStatus)\n\nEnvironment:\n"
        for variable in environment {
            let pad = String(repeating: " ", count: max(1, 26 - variable.name.count))
            out += "    \(variable.name)\(pad)\(variable.meaning.split(separator: "\n").joined(separator: "\n" + String(repeating: " ", count: 30)))\n"
        }
        out += "\n`keychainfs help COMMAND` shows a command's options; `keychainfs help --man [PAGE]` prints a manual page.\n"
        return out
    }

    // The sections below are `help`'s text and the manual pages' (ManPage): one source for both.

    static let introduction = """
        keychainfs keeps secrets in an encrypted vault served by a daemon. Item commands follow
        macOS's security tool. The vault is the last argument, else $KEYCHAINFS_VAULT, else
        ~/.local/share/keychainfs/login.vault (/var/lib/keychainfs/login.vault for root).
        """

    static let exitStatus = """
        0 on success, 2 for a usage error, otherwise the low byte of the keychain
        status (item not found 44, duplicate 45, auth failed 51, interaction not allowed 36,
        missing entitlement 30, data not available 28, user canceled 128, I/O error 220,
        disk full 222).
        """

    /// The variables a user sets; the daemon the CLI starts inherits them.
    static let environment: [(name: String, meaning: String)] = [
        ("KEYCHAINFS_VAULT", "the default vault"),
        ("KEYCHAINFS_RUNTIME_DIR", "where daemon sockets, logs and back-off files live (default\n/run/keychainfs for a vault owned by root, else /tmp/keychainfs-UID)"),
        ("KEYCHAINFS_DEVICE_KEY", "the device key file (default /var/lib/keychainfs/device.key for\nroot, else ~/.local/state/keychainfs/device.key)"),
        ("KEYCHAINFS_TCTI", "the TPM for a sealed device key and Secure Enclave keys, in\nTPM2TOOLS_TCTI's syntax (device:/dev/tpmrm0); default: the TSS default"),
        ("KEYCHAINFS_SOCKET", "for the credential helpers and import Security: the daemon socket\nto use instead of the default vault's (never starts a daemon)"),
        ("KEYCHAINFS_PRUNE_SECONDS", "for the daemon: seconds after a mount's listing of over 4,096 names\ncloses until the kernel is asked to drop them (default 30; 0: never)"),
    ]

    /// The variables the credential helpers read.
    static let helperVariables: Set<String> = ["KEYCHAINFS_VAULT", "KEYCHAINFS_RUNTIME_DIR", "KEYCHAINFS_SOCKET"]

    static let files = """
        ~/.local/share/keychainfs/login.vault   a user's default vault
        /var/lib/keychainfs/login.vault         root's default vault
        VAULT.audit                             the vault's hash-chained audit log
        /run/keychainfs, /tmp/keychainfs-UID    daemon sockets, logs and back-off counts
        """

    static let daemonDescription = """
        keychainfs-daemon is the keychainfs command line with the vault engine in-process.
        keychainfs runs the keychainfs-daemon installed beside it for daemon, create-keychain,
        mount, the mount.fuse3 form, secret-service, device-key, delete-keychain and the key and
        certificate commands; every other command it runs as keychainfs does (see keychainfs(1)).
        The first command that needs a vault's daemon starts `keychainfs-daemon daemon VAULT` in
        its own session, logging to the runtime directory; systemd runs it per vault with the
        unit keychainfs@.service, whose instance is the vault's path, escaped:
          systemctl enable --now "keychainfs@$(systemd-escape --path /var/lib/keychainfs/login.vault).service"
        One daemon serves one vault, its mounts and every user of it; it decides by the caller's
        kernel credentials. It is not dumpable and logs decisions, never a secret.
        """

    static let daemonSignals = """
        SIGUSR1 locks the vault. SIGTERM locks it, wipes every key and stops the daemon
        (as keychainfs stop does).
        """

    static let mountHelperDescription = """
        mount(8) runs mount.fuse.keychainfs (a link to keychainfs) for the file system type
        fuse.keychainfs, so a vault mounts from /etc/fstab:
          /var/lib/keychainfs/login.vault /run/keychain fuse.keychainfs allow_other 0 0
        or with the unit run-keychain.mount. The vault's daemon serves the mount and is started
        when none runs; the mount is made in the caller's namespace and handed to the daemon.
        The options are those of keychainfs mount:
        """

    static let gitHelperDescription = """
        git runs git-credential-keychainfs ACTION with git's credential protocol (gitcredentials(7))
        on standard input: key=value lines ending at a blank line. Credentials are kept as
        internet passwords in the vault, with the attributes of macOS's git-credential-osxkeychain
        (protocol, host and port, path, username), so they read the same through
        keychainfs find-internet-password and the mount.
          get     print password= (and username=) of the first matching item, or nothing
          store   store a complete credential (a new item, or a new secret for the same one)
          erase   delete the matching items (given a password, only the items holding it)
        Passwords never pass through argv or the environment.
        """

    static let dockerHelperDescription = """
        docker runs docker-credential-keychainfs ACTION with docker's credential helper protocol
        when ~/.docker/config.json names it ("credsStore": "keychainfs", or "credHelpers").
        Credentials are kept as internet passwords labelled "Docker Credentials", with the
        attributes of macOS's docker-credential-osxkeychain.
          store     read {"ServerURL":...,"Username":...,"Secret":...} and store it
          get       read a server URL and print its credentials as JSON
          erase     read a server URL and delete its credentials
          list      print {"URL":"username",...}
          version   print the release
        """

    static let helperExitStatus = """
        0 on success, 1 on failure with a message (on standard error for git's helper, on standard
        output for docker's, as their protocols say).
        """
}
