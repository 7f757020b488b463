import KeychainCrypto
import KeychainSystem

/// Where vaults and daemon sockets live.
public enum Paths {
    /// The vault to use when none is named: `$KEYCHAINFS_VAULT`, else
    /// `/var/lib/keychainfs/login.vault` for root, else `$XDG_DATA_HOME/keychainfs/login.vault`
    /// (default `~/.local/share/keychainfs/login.vault`).
    public static func defaultVault() -> String {
        if let v = environment("KEYCHAINFS_VAULT") { return v }
        if CurrentProcess.effectiveUserID == 0 { return "/var/lib/keychainfs/login.vault" }
        if let d = environment("XDG_DATA_HOME") { return d + "/keychainfs/login.vault" }
        return (environment("HOME") ?? "/tmp") + "/.local/share/keychainfs/login.vault"
    }

    /// An absolute, symlink-free form of `path` (its directory must exist).
    public static func canonical(_ path: String) -> String {
        if let resolved = try? FileSystem.canonicalPath(path) { return resolved }
        // The file may not exist yet: resolve the directory and keep the name.
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        if let d = try? FileSystem.canonicalPath(dir.isEmpty ? "/" : dir) {
            return (d == "/" ? "" : d) + "/" + name
        }
        return path
    }

    /// The daemon socket of a vault, found from the vault path alone, so every user of a shared
    /// vault reaches the same daemon: `<runtime dir>/<hash>.sock`, the hash being BLAKE2b of the
    /// canonical vault path.
    public static func socket(forVault vault: String) -> String {
        runtimeDirectory(forVault: vault) + "/" + hexHash(canonical(vault)) + ".sock"
    }

    /// The file that records failed unlock attempts, so back-off survives a daemon restart.
    public static func lockoutFile(forVault vault: String) -> String {
        runtimeDirectory(forVault: vault) + "/" + hexHash(canonical(vault)) + ".lockout"
    }

    /// The mounts the vault's daemon serves (`MountRecord`), re-established after a restart.
    public static func mountRecords(forVault vault: String) -> String {
        runtimeDirectory(forVault: vault) + "/" + hexHash(canonical(vault)) + ".mounts"
    }

    /// The daemon's log when the CLI started it in the background.
    public static func logFile(forVault vault: String) -> String {
        runtimeDirectory(forVault: vault) + "/" + hexHash(canonical(vault)) + ".log"
    }

    /// `$KEYCHAINFS_RUNTIME_DIR` when set; otherwise `/run/keychainfs` for a vault owned by root
    /// and `/tmp/keychainfs-UID` for a vault owned by UID, or, for that owner and root when
    /// another user took that name first, `/run/user/UID/keychainfs` (see `RuntimeDirectory`).
    /// Clients refuse a directory that others could write.
    public static func runtimeDirectory(forVault vault: String) -> String {
        if let d = environment("KEYCHAINFS_RUNTIME_DIR") { return d }
        return RuntimeDirectory.forVault(owner: vaultOwner(vault), name: hexHash(canonical(vault)))
    }

    /// The owner of the vault file, or of its directory when the file does not exist yet.
    public static func vaultOwner(_ vault: String) -> UInt32 {
        if let st = try? FileSystem.status(of: vault) { return st.owner }
        let path = canonical(vault)
        let dir = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if let st = try? FileSystem.status(of: dir.isEmpty ? "/" : dir) { return st.owner }
        return CurrentProcess.effectiveUserID
    }

    static func hexHash(_ s: String) -> String {
        KeyedHash.hash(Array(s.utf8), key: nil, length: 16).map { b in
            let h = String(b, radix: 16)
            return b < 16 ? "0" + h : h
        }.joined()
    }

    /// An environment variable's value; nil when unset or empty.
    public static func environment(_ name: String) -> String? { CurrentProcess.environment(name) }
}
