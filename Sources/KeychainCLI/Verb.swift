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
        var out = """
        usage: keychainfs COMMAND [OPTIONS] [VAULT]

        keychainfs keeps secrets in an encrypted vault served by a daemon. Item commands follow
        macOS's security tool. The vault is the last argument, else $KEYCHAINFS_VAULT, else
        ~/.local/share/keychainfs/login.vault (/var/lib/keychainfs/login.vault for root).

        Commands:

        """
        for v in Verb.all {
            let pad = String(repeating: " ", count: max(1, 26 - v.name.count))
            out += "    \(v.name)\(pad)\(v.summary)\n"
        }
        out += """

        Exit status: 0 on success, 2 for a usage error, otherwise the low byte of the keychain
        status (item not found 44, duplicate 45, auth failed 51, interaction not allowed 36,
        missing entitlement 30). `keychainfs help COMMAND` shows a command's options.

        """
        return out
    }
}
