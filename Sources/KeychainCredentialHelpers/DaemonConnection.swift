import KeychainClient
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// How a helper reaches the vault: `$KEYCHAINFS_SOCKET` when set, else the daemon of
/// `$KEYCHAINFS_VAULT` or the default vault, started with the `keychainfs-daemon` installed
/// beside the helper when none runs (as `keychainfs` starts it).
enum DaemonConnection {
    static func connect() throws -> DaemonClient {
        if let socket = Paths.environment("KEYCHAINFS_SOCKET") { return try DaemonClient.connect(socketPath: socket) }
        let vault = Paths.canonical(Paths.defaultVault())
        return try DaemonClient.connect(vaultPath: vault, startWith: [engineBeside(), "daemon", vault])
    }

    /// `keychainfs-daemon` in the directory of the running executable.
    static func engineBeside() -> String {
        guard let me = try? CurrentProcess.executablePath(), !me.isEmpty else { return "keychainfs-daemon" }
        guard let slash = me.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "keychainfs-daemon" }
        return String(me[...slash]) + "keychainfs-daemon"
    }
}
