import CProcess
import Glibc
import KeychainModel
import KeychainCrypto
import KeychainProtocol
import KeychainSystem
import Synchronization

/// A connection to a vault's daemon. Used by the CLI and the Security module.
public final class DaemonClient {
    public let vaultPath: String
    private let fd: Int32
    private let frames: FrameReader

    /// Takes ownership of `fd`: it is closed with the client, or at once when this throws.
    private init(vaultPath: String, fd: Int32) throws {
        self.vaultPath = vaultPath
        self.fd = fd
        do {
            frames = try FrameReader(fd: fd)
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    /// Connects to the daemon of `vaultPath`.
    /// - Parameter start: a program to start the daemon with (`[path, "daemon", vault]`) when
    ///   none answers; nil to fail instead.
    /// - Throws: `noSuchKeychain` when the vault does not exist, `notAvailable` when no daemon
    ///   answers, `RuntimeDirectoryError` (status `io`) when others could write the socket's directory.
    public static func connect(vaultPath: String, startWith start: [String]? = nil) throws -> DaemonClient {
        let socket = Paths.socket(forVault: vaultPath)
        try checkDirectory(of: socket, vault: vaultPath)
        if let fd = try UnixSocket.connect(to: socket) { return try verified(fd, vault: vaultPath) }
        guard let start else { throw KeychainStatus.notAvailable }
        guard access(vaultPath, F_OK) == 0 else { throw KeychainStatus.noSuchKeychain }
        // A daemon runs as the vault's owner: root starting one for someone else's vault would
        // hold the wrong device key and lock the owner out of administering it.
        let owner = Paths.vaultOwner(vaultPath)
        guard geteuid() == owner else { throw KeychainStatus.notAvailable }
        let pid = try spawnDetached(start, log: Paths.logFile(forVault: vaultPath))
        try checkDirectory(of: socket, vault: vaultPath)
        // The daemon opens the vault and binds within milliseconds; allow for a slow machine.
        var ours = true
        for attempt in 0..<500 {
            if let fd = try UnixSocket.connect(to: socket) { return try verified(fd, vault: vaultPath) }
            // A daemon that exited says why in its status (a damaged or foreign vault file);
            // status 1 means another client's daemon won the vault: wait for that one instead.
            var status: Int32 = 0
            if ours, waitpid(pid, &status, WNOHANG) == pid {
                let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 0
                guard code == Self.anotherDaemonServes else {
                    let why = Self.lastLine(of: Paths.logFile(forVault: vaultPath))
                    Self.startFailureLine.withLock { $0 = why }
                    throw Self.status(forExit: code)
                }
                ours = false
            }
            usleep(attempt < 50 ? 2_000 : 10_000)
        }
        throw KeychainStatus.notAvailable
    }

    /// Connects to a daemon socket by path (`KEYCHAINFS_SOCKET`), never starting one. The peer
    /// must be root or this process's own user.
    /// - Throws: `notAvailable` when nothing (acceptable) answers there.
    public static func connect(socketPath: String) throws -> DaemonClient {
        guard let fd = try UnixSocket.connect(to: socketPath) else { throw KeychainStatus.notAvailable }
        guard let peer = try? UnixSocket.peerCredentials(fd), peer.uid == 0 || peer.uid == geteuid() else {
            close(fd)
            throw KeychainStatus.notAvailable
        }
        return try DaemonClient(vaultPath: socketPath, fd: fd)
    }

    /// The connection's socket, to poll for events after `watch` (read them with `receive`).
    public var descriptor: Int32 { fd }

    /// Whether part of the daemon's next frame was received already: `receive` returns (or
    /// finishes) it without the socket being readable.
    public var hasBufferedBytes: Bool { frames.hasBufferedBytes }

    /// Waits for the next response the daemon sends unasked (events after `watch`); nil when
    /// the daemon closed the connection.
    public func receive() throws -> Response? {
        guard let frame = try frames.read() else { return nil }
        defer { frame.wipe() }
        return try Response.decode(frame)
    }

    /// Accepts a connection only when the process at the other end is root or the vault's
    /// owner, so nobody else can stand in for the daemon and collect passphrases or secrets.
    private static func verified(_ fd: Int32, vault: String) throws -> DaemonClient {
        guard let peer = try? UnixSocket.peerCredentials(fd), peer.uid == 0 || peer.uid == Paths.vaultOwner(vault) else {
            close(fd)
            throw KeychainStatus.notAvailable
        }
        return try DaemonClient(vaultPath: vault, fd: fd)
    }

    /// Sends one request and waits for its response. A non-success status is thrown.
    @discardableResult
    public func send(_ request: Request) throws -> Response {
        let payload = try request.encoded()
        defer { payload.wipe() }
        try Frame.write(payload, to: fd)
        guard let reply = try frames.read() else { throw KeychainStatus.notAvailable }
        defer { reply.wipe() }
        let response = try Response.decode(reply)
        guard response.status == .success else { throw response.status }
        return response
    }

    /// Sends one request with a descriptor attached to its first bytes (SCM_RIGHTS) and waits
    /// for its response; the descriptor stays open here. A non-success status is thrown.
    @discardableResult
    public func send(_ request: Request, passing descriptor: Int32) throws -> Response {
        let payload = try request.encoded()
        defer { payload.wipe() }
        let header = Frame.header(for: payload)
        let sent = header.withUnsafeBytes { kcfs_send_with_fd(fd, $0.baseAddress, $0.count, descriptor) }
        guard sent == header.count else { throw KeychainStatus.io }
        try Frame.writeBody(payload, to: fd)
        guard let reply = try frames.read() else { throw KeychainStatus.notAvailable }
        defer { reply.wipe() }
        let response = try Response.decode(reply)
        guard response.status == .success else { throw response.status }
        return response
    }

    /// Refuses a socket directory that someone other than root or the vault's owner could
    /// write to, so nobody can stand in for the daemon. A missing one is fine: no daemon yet.
    /// - Throws: `RuntimeDirectoryError` (status `io`) naming the directory and the reason.
    static func checkDirectory(of socket: String, vault: String) throws {
        let dir = String(socket[..<(socket.lastIndex(of: "/") ?? socket.startIndex)])
        if let reason = RuntimeDirectory.problem(with: dir, owner: Paths.vaultOwner(vault)) {
            throw RuntimeDirectoryError(directory: dir, reason: reason)
        }
    }

    /// Starts `argv` in a new session with stdin on /dev/null, output appended to `log`, and
    /// only the environment the daemon needs (no LD_PRELOAD or other surprises from a caller).
    /// The daemon's exit status when another daemon already holds the vault.
    static let anotherDaemonServes: Int32 = 1

    private static let startFailureLine = Mutex<String?>(nil)

    /// Why the daemon this process started exited at once (the last line of its log, such as
    /// a TPM that did not unseal the device key), for the error the caller prints; nil otherwise.
    public static var startFailure: String? { startFailureLine.withLock { $0 } }

    /// The last line of a daemon log (its last 4 KiB), without the program's prefix.
    static func lastLine(of path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let end = lseek(fd, 0, SEEK_END)
        guard end > 0 else { return nil }
        var tail = [UInt8](repeating: 0, count: Int(min(end, 4096)))
        let n = pread(fd, &tail, tail.count, end - off_t(tail.count))
        guard n > 0 else { return nil }
        let lines = String(decoding: tail[..<n], as: UTF8.self).split(separator: "\n")
        guard var line = lines.last.map(String.init) else { return nil }
        if line.hasPrefix("keychainfs-daemon: ") { line.removeFirst("keychainfs-daemon: ".count) }
        return line
    }

    static func status(forExit code: Int32) -> KeychainStatus {
        let known: [KeychainStatus] = [.invalidKeychain, .noSuchKeychain, .io, .internalComponent, .writePermission, .decode]
        return known.first { $0.exitCode == code } ?? .notAvailable
    }

    @discardableResult
    static func spawnDetached(_ argv: [String], log: String) throws -> pid_t {
        let dir = String(log[..<(log.lastIndex(of: "/") ?? log.startIndex)])
        mkdir(dir, 0o755)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of the starter's: a daemon holding a caller's pipe would make
        // `$(keychainfs ...)` wait for the daemon to exit.
        kcfs_spawn_actions_closefrom(&actions, 3)
        kcfs_spawn_actions_chdir(&actions, "/")
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        posix_spawnattr_setflags(&attr, ChildProcess.newSessionFlag)
        var cargs = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
        for name in ["HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "KEYCHAINFS_RUNTIME_DIR", "KEYCHAINFS_DEVICE_KEY", "KEYCHAINFS_VAULT", "KEYCHAINFS_TCTI"] {
            if let v = Paths.environment(name) { env.append(name + "=" + v) }
        }
        var cenv = env.map { strdup($0) } + [nil]
        defer { for p in cenv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, &attr, &cargs, &cenv)
        guard rc == 0 else { throw KeychainStatus.notAvailable }
        return pid
    }
}
