import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol
import KeychainSystem
import Synchronization

/// The `keychainfs` command line. Item verbs follow macOS's `security` tool.
public enum CLI {
    /// Exit statuses that are not a keychain status; frozen (docs/cli.md).
    public enum Exit {
        public static let success: Int32 = 0
        public static let usage: Int32 = 2
    }

    /// Runs one command line and returns the process exit status. A verb that needs the
    /// engine in-process replaces this process with `keychainfs-daemon` (`Engine.exec`).
    public static func main(_ argv: [String]) -> Int32 {
        // A command holds a few small buffers for a moment: a page per size class, not 256 KiB
        // locked and zeroed each (about a third of a millisecond per command).
        SecureBytes.smallestRegion = CurrentProcess.pageSize
        return main(argv, engine: nil)
    }

    /// Runs one command line; `engine` supplies the verbs that need the daemon, the vault file
    /// or the mount in-process (nil in the thin `keychainfs`).
    package static func main(_ argv: [String], engine: Engine?) -> Int32 {
        let args = Array(argv.dropFirst())
        guard let verbName = args.first else {
            Terminal.writeString(2, Help.overview)
            return Exit.usage
        }
        if verbName == "--version" || verbName == "version" {
            Terminal.writeString(1, "keychainfs \(Help.version)\n")
            return Exit.success
        }
        if verbName == "help" || verbName == "--help" || verbName == "-h" {
            guard args.count > 1 else {
                Terminal.writeString(1, Help.overview)
                return Exit.success
            }
            if args[1] == "--man" {  // help --man [PAGE]: a manual page as roff (ManPage)
                guard args.count <= 3, let page = ManPage.render(args.count == 3 ? args[2] : "keychainfs") else {
                    Terminal.warn("help --man takes one of: \(ManPage.names.joined(separator: ", "))")
                    return Exit.usage
                }
                Terminal.writeString(1, page)
                return Exit.success
            }
            guard args.count == 2, let v = Verb.named(args[1]) else {
                Terminal.warn(args.count == 2 ? "no such verb \(Output.jsonString(args[1]))" : "help takes one verb")
                Terminal.writeString(2, Help.overview)
                return Exit.usage
            }
            Terminal.writeString(1, v.help)
            return Exit.success
        }
        // The mount.fuse3 form: keychainfs VAULT MOUNTPOINT [-o OPTIONS]
        if Verb.named(verbName) == nil, args.count >= 2, FileSystem.exists(verbName), !args[1].hasPrefix("-") {
            guard let engine else { return Engine.exec(argv) }
            do {
                let parsed = try Arguments(Array(args.dropFirst(2)), valued: ["-o"], flags: ["-n", "-v", "-f", "-s"])
                return try engine.mountFuseForm(Paths.canonical(verbName), Paths.canonical(args[1]),
                                                parsed.all("-o").joined(separator: ","))
            } catch {
                return report(error, help: MountVerbs.mount.help)
            }
        }
        guard let verb = Verb.named(verbName) else {
            Terminal.warn("unknown command \"\(verbName)\"; see keychainfs help")
            return Exit.usage
        }
        let rest = Array(args.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            Terminal.writeString(1, verb.help)
            return Exit.success
        }
        // The engine may take over a thin verb (import, export of keys: it has libcrypto).
        guard let body = engine?.verbs[verb.name] ?? verb.body else { return Engine.exec(argv) }
        do {
            return try verb.run(rest, body: body)
        } catch {
            // The vault the verb named, for the meaning added to a keychain status: the one it
            // chose, else the last positional when it is a file (group, sync, mount take other
            // words), else the default.
            let parsed = try? verb.parse(rest)
            let named = parsed?.positionals.last.map(Paths.canonical).flatMap { path -> String? in
                (try? FileSystem.status(of: path))?.kind == .regular ? path : nil
            }
            let vault = Context.chosenVault ?? named ?? Paths.canonical(Paths.defaultVault())
            // A usage error may come before `--json` could be parsed: the word alone decides.
            let json = parsed?.has("--json") ?? rest.contains("--json")
            return report(error, help: verb.help, vault: vault, verb: verb.name, json: json)
        }
    }

    /// Prints an error as the contract says and returns its exit status: on standard error
    /// (Apple's sentence, then what it means here), and with `json` also as one object on
    /// standard output (docs/cli.md, "JSON").
    package static func report(_ error: Error, help: String, vault: String? = nil, verb: String? = nil, json: Bool = false) -> Int32 {
        let failure = Failure(error, vault: vault, verb: verb)
        Terminal.writeString(2, failure.text + (failure.status == nil ? help : ""))
        if json { Terminal.writeString(1, failure.json + "\n") }
        return failure.exit
    }
}

/// What every verb shares: the vault path and a daemon connection.
package struct Context: Sendable {
    package let args: Arguments

    /// The trailing positional argument, else `$KEYCHAINFS_VAULT`, else the per-user default.
    package var vault: String {
        let path = Paths.canonical(args.positionals.last ?? Paths.defaultVault())
        Self.chosen.withLock { $0 = path }
        return path
    }

    /// The vault the verb chose (one per command): the path an error names ("no vault at PATH").
    private static let chosen = Mutex<String?>(nil)
    static var chosenVault: String? { chosen.withLock { $0 } }

    package func checkPositionals(max: Int = 1) throws {
        guard args.positionals.count <= max else { throw UsageError("too many arguments") }
    }

    /// Connects to the vault's daemon, starting it when none runs.
    package func client() throws -> DaemonClient {
        try Engine.connect(vault)
    }

    var json: Bool { args.has("--json") }
}

func selfExecutable() -> String {
    guard let path = try? CurrentProcess.executablePath(), !path.isEmpty else { return CommandLine.arguments[0] }
    return path
}
