import KeychainClient
import KeychainModel
import KeychainSystem

/// The verbs that need the engine in-process, and the executable that has it.
///
/// `keychainfs` is a thin client of the daemon: it links neither the daemon nor libfuse, and in
/// release builds carries the Swift runtime (`-static-stdlib`), so an item verb costs about a
/// stdlib-only Swift process start (docs/performance.md). `keychainfs-daemon`,
/// installed beside it, is the same command line with the daemon, the vault engine and the
/// mount linked in. `daemon`, `create-keychain` (it writes the vault file), `mount` and the
/// mount.fuse3 form (they parse options with the mount's own parser) and `secret-service`
/// (sd-bus) have no body here:
/// `keychainfs` replaces itself with `keychainfs-daemon` and the same arguments.
package struct Engine: Sendable {
    /// The bodies of the verbs declared without one, by verb name.
    package var verbs: [String: VerbBody]
    /// `keychainfs VAULT MOUNTPOINT -o OPTIONS`: the vault, the mountpoint and the options.
    package var mountFuseForm: @Sendable (String, String, String) throws -> Int32

    package init(verbs: [String: VerbBody], mountFuseForm: @escaping @Sendable (String, String, String) throws -> Int32) {
        self.verbs = verbs
        self.mountFuseForm = mountFuseForm
    }

    package static let executableName = "keychainfs-daemon"

    /// `keychainfs-daemon` in the directory of the running executable (either binary).
    package static var executable: String {
        let me = selfExecutable()
        guard let slash = me.utf8.lastIndex(of: UInt8(ascii: "/")) else { return executableName }
        return String(me[...slash]) + executableName
    }

    /// Connects to the vault's daemon, starting `keychainfs-daemon daemon VAULT` when none runs.
    package static func connect(_ vault: String) throws -> DaemonClient {
        try DaemonClient.connect(vaultPath: vault, startWith: [executable, "daemon", vault])
    }

    /// Runs `argv` in `keychainfs-daemon` in place of this process (execv keeps the pid, the
    /// environment and the descriptors: systemd and mount(8) see no difference). Returns only
    /// when that fails: errSecNotAvailable, exit 53.
    static func exec(_ argv: [String]) -> Int32 {
        let path = executable
        let failure = CurrentProcess.replace(with: path, arguments: [path] + argv.dropFirst())
        Terminal.writeString(2, "keychainfs: \(KeychainStatus.notAvailable.message)\nkeychainfs: cannot run \(path): \(failure)\n")
        return KeychainStatus.notAvailable.exitCode
    }
}
