import Glibc
import KeychainCore
import KeychainProtocol

/// One daemon per vault. Two locks, both held for the daemon's life and released by the
/// kernel when it ends: the socket's lock in the runtime directory (clients that raced to start
/// a daemon there wait for the winner), and a lock on the vault file itself, which a daemon
/// started with another `KEYCHAINFS_RUNTIME_DIR` (or through another path to the same file)
/// cannot take either.
enum VaultClaim {
    /// The daemon's exit status when another daemon of the same runtime directory won the race;
    /// its clients wait for that daemon (DaemonClient.anotherDaemonServes).
    static let anotherDaemonServes: Int32 = 1

    /// Takes both locks after checking the runtime directory. Returns the exit status to stop
    /// with, or nil when this daemon may serve the vault.
    static func claim(_ vaultPath: String, log: @Sendable (String) -> Void) -> Int32? {
        let socketPath = Paths.socket(forVault: vaultPath)
        let dir = String(socketPath[..<socketPath.lastIndex(of: "/")!])
        mkdir(dir, 0o755)
        // The directory holds the socket and the back-off count: only we may change it.
        var st = stat()
        guard lstat(dir, &st) == 0, st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(), st.st_mode & 0o022 == 0 else {
            log("refusing runtime directory \(dir): it must be a directory of uid \(geteuid()) that others cannot write")
            return KeychainStatus.io.exitCode
        }
        let runtimeLock = open(socketPath + ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        let anotherServes = {
            guard let probe = try? UnixSocket.connect(to: socketPath) else { return false }
            close(probe)
            return true
        }
        guard waitForLock(runtimeLock, giveUpIf: anotherServes) else {
            log("a daemon is already serving \(vaultPath) at \(socketPath)")
            return anotherDaemonServes
        }
        // A vault that cannot be opened is reported by Vault.open, with its own status.
        let vaultLock = open(vaultPath, O_RDONLY | O_CLOEXEC)
        guard vaultLock >= 0 else { return nil }
        guard waitForLock(vaultLock, giveUpIf: { false }) else {
            log("another daemon already serves \(vaultPath) (started with another runtime directory than \(dir)); "
                + "stop it first, or use the same KEYCHAINFS_RUNTIME_DIR")
            return KeychainStatus.notAvailable.exitCode
        }
        return nil  // both descriptors stay open, and the locks held, until the process ends
    }

    /// Takes an exclusive lock, allowing a daemon that was just stopped two seconds to exit.
    private static func waitForLock(_ fd: Int32, giveUpIf anotherServes: () -> Bool) -> Bool {
        guard fd >= 0 else { return false }
        for _ in 0..<40 {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            if anotherServes() { return false }
            usleep(50_000)
        }
        return flock(fd, LOCK_EX | LOCK_NB) == 0
    }
}
