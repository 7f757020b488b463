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
            try? FileDescriptor(rawValue: fd).close()
            throw error
        }
    }

    deinit { try? FileDescriptor(rawValue: fd).close() }

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
        guard FileSystem.exists(vaultPath) else {
            missingVaultPath.withLock { $0 = vaultPath }
            throw KeychainStatus.noSuchKeychain
        }
        // A daemon runs as the vault's owner: root starting one for someone else's vault would
        // hold the wrong device key and lock the owner out of administering it.
        let owner = Paths.vaultOwner(vaultPath)
        guard CurrentProcess.effectiveUserID == owner else { throw KeychainStatus.notAvailable }
        let spawned = try spawnDetached(start, log: Paths.logFile(forVault: vaultPath))
        let pid = spawned.pid
        var report = spawned.report
        defer { try? report?.close() }
        try checkDirectory(of: socket, vault: vaultPath)
        // The daemon opens the vault and binds within milliseconds; allow for a slow machine.
        var ours = true
        for attempt in 0..<500 {
            if let fd = try UnixSocket.connect(to: socket) { return try verified(fd, vault: vaultPath) }
            // A daemon that exited says why in its status (a damaged or foreign vault file);
            // status 1 means another client's daemon won the vault: wait for that one instead.
            if ours, let code = Self.exitStatus(of: pid, report: &report) {
                guard code == Self.anotherDaemonServes else {
                    let why = Self.lastLine(of: Paths.logFile(forVault: vaultPath))
                    Self.startFailureLine.withLock { $0 = why }
                    throw Self.status(forExit: code)
                }
                ours = false
            }
            let pause: Int32 = attempt < 50 ? 2 : 10
            // The report wakes this at once when the daemon writes its status or closes it.
            if ours, let report, (try? report.waitUntilReadable(timeoutMilliseconds: pause)) != nil { continue }
            SystemClock.sleep(microseconds: UInt32(pause) * 1_000)
        }
        throw KeychainStatus.notAvailable
    }

    /// The exit status of the daemon this process started, once it has ended; nil while it
    /// runs (or listens). From its wait status when this process can collect it; else from the
    /// status the daemon wrote to its start report before exiting (a process that ignores
    /// SIGCHLD, as it may have inherited, never sees its children's wait status). A daemon
    /// killed by a signal gives 0.
    static func exitStatus(of pid: Int32, report: inout FileDescriptor?) -> Int32? {
        if let status = ChildProcess.statusIfEnded(pid) { return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 0 }
        guard let r = report, (try? r.waitUntilReadable(timeoutMilliseconds: 0)) == true else { return nil }
        // One byte, then the end; or the end alone: the daemon listens (or died without a word).
        var byte: UInt8 = 0
        let n = withUnsafeMutableBytes(of: &byte) { (try? r.read(into: $0)) ?? 0 }
        try? r.close()
        report = nil
        return n == 1 ? Int32(byte) : nil
    }

    /// Connects to a daemon socket by path (`KEYCHAINFS_SOCKET`), never starting one. The peer
    /// must be root or this process's own user.
    /// - Throws: `notAvailable` when nothing (acceptable) answers there.
    public static func connect(socketPath: String) throws -> DaemonClient {
        guard let fd = try UnixSocket.connect(to: socketPath) else { throw KeychainStatus.notAvailable }
        guard let peer = try? UnixSocket.peerCredentials(fd), peer.uid == 0 || peer.uid == CurrentProcess.effectiveUserID else {
            try? FileDescriptor(rawValue: fd).close()
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
            try? FileDescriptor(rawValue: fd).close()
            throw KeychainStatus.notAvailable
        }
        return try DaemonClient(vaultPath: vault, fd: fd)
    }

    /// Sends one request and waits for its response. A non-success status is thrown.
    /// A `copyMatching` of one password by its primary key goes as a `lookup` (`ItemLookup`),
    /// which the daemon answers as it answers the query; to a daemon from before that
    /// operation (it answers errSecBadReq) it goes as it is, as do this connection's next ones.
    @discardableResult
    public func send(_ request: Request) throws -> Response {
        if takesLookups, request.operation == .copyMatching, request.secrets.isEmpty, request.options.isEmpty,
           request.changes.isEmpty {
            do {
                if let response = try sendLookup(request.query) { return response }
            } catch KeychainStatus.badReq {
                takesLookups = false
            }
        }
        let payload = try request.encoded()
        defer { payload.wipe() }
        try Frame.write(payload, to: fd)
        return try receiveResponse()
    }

    /// Whether the daemon may be sent `lookup`s: until it answers one with errSecBadReq.
    private var takesLookups = true

    /// Sends `query` as a `lookup` and waits for its response; nil, with nothing sent, for a
    /// query of another shape. The payload is made on the stack: it holds attributes, no secret.
    private func sendLookup(_ query: Attributes) throws -> Response? {
        try withUnsafeTemporaryAllocation(byteCount: Self.lookupPayloadLimit, alignment: 8) { buffer -> Response? in
            guard let count = ItemLookup.payload(for: query, into: buffer) else { return nil }
            let payload = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
            defer { wipeMemory(payload) }
            try Frame.write(bytes: UnsafeRawBufferPointer(payload), to: fd)
            return try receiveResponse()
        }
    }

    /// The largest `lookup` payload sent from the stack; a larger one goes as `copyMatching`.
    private static let lookupPayloadLimit = 1024

    /// Reads the response to the request just sent. A non-success status is thrown.
    private func receiveResponse() throws -> Response {
        guard let reply = try frames.read() else { throw KeychainStatus.notAvailable }
        defer { reply.wipe() }
        let response = try Response.decode(reply)
        guard response.status == .success else { throw response.status }
        return response
    }

    /// Sends one request with a descriptor attached to its first bytes (SCM_RIGHTS) and waits
    /// for its response; the descriptor stays open here. A non-success status is thrown.
    /// The daemon lets a connection pass descriptors only once it has accepted it, and only
    /// for the owner and root: a ping first makes sure it has; a refusal then (EPERM) is
    /// `errSecAuthFailed`, as the request itself would be.
    @discardableResult
    public func send(_ request: Request, passing descriptor: Int32) throws -> Response {
        try send(Request(.ping))
        let payload = try request.encoded()
        defer { payload.wipe() }
        let header = Frame.header(for: payload)
        let sent = header.withUnsafeBytes { head in
            Result { () throws(Errno) in try FileDescriptor(rawValue: fd).send(head, passing: FileDescriptor(rawValue: descriptor)) }
        }
        if case .failure(.notPermitted) = sent { throw KeychainStatus.authFailed }
        guard (try? sent.get()) == header.count else { throw KeychainStatus.io }
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

    private static let missingVaultPath = Mutex<String?>(nil)

    /// The vault path a `connect` looked for and did not find (errSecNoSuchKeychain), for the
    /// error the caller prints; nil otherwise.
    public static var missingVault: String? { missingVaultPath.withLock { $0 } }

    /// The last line of a daemon log (its last 4 KiB), without the program's prefix.
    static func lastLine(of path: String) -> String? {
        guard let fd = try? FileDescriptor.open(path, .readOnly, options: .noFollow) else { return nil }
        defer { try? fd.close() }
        guard let end = try? fd.seek(offset: 0, from: .end), end > 0 else { return nil }
        var tail = [UInt8](repeating: 0, count: Int(min(end, 4096)))
        let n = (try? tail.withUnsafeMutableBytes { b in
            Result { () throws(Errno) in try fd.read(fromAbsoluteOffset: end - Int64(b.count), into: b) }
        }.get()) ?? 0
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

    /// The descriptor a daemon this process starts finds its start report on (`KEYCHAINFS_START_FD`).
    static let startReportDescriptor: Int32 = 3

    /// Starts the daemon; returns its pid and the read end of its start report, a pipe on
    /// which the daemon writes its exit status if it exits before it listens, and which it
    /// closes once it listens (nil when no pipe could be made: the wait status alone tells).
    @discardableResult
    static func spawnDetached(_ argv: [String], log: String) throws -> (pid: Int32, report: FileDescriptor?) {
        let dir = String(log[..<(log.lastIndex(of: "/") ?? log.startIndex)])
        try? FileSystem.createDirectory(dir, permissions: FilePermissions(rawValue: 0o755))
        var env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
        for name in ["HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "KEYCHAINFS_RUNTIME_DIR", "KEYCHAINFS_DEVICE_KEY", "KEYCHAINFS_VAULT", "KEYCHAINFS_TCTI",
                     "KEYCHAINFS_PRUNE_SECONDS"] {
            if let v = Paths.environment(name) { env.append(name + "=" + v) }
        }
        let report = try? FileDescriptor.pipe()
        defer { try? report?.write.close() }
        var setup: [ChildProcess.Setup] = [
            .open(0, path: "/dev/null", .readOnly),
            .open(1, path: log, .writeOnly, options: [.create, .append, .noFollow], permissions: .ownerReadWrite),
            .duplicate(FileDescriptor(rawValue: 1), as: 2),
        ]
        if let report {
            setup.append(.duplicate(report.write, as: startReportDescriptor))
            env.append("KEYCHAINFS_START_FD=\(startReportDescriptor)")
        }
        // Nothing else of the starter's: a daemon holding a caller's pipe would make
        // `$(keychainfs ...)` wait for the daemon to exit.
        setup += [.closeFrom(report == nil ? startReportDescriptor : startReportDescriptor + 1), .changeDirectory("/")]
        do { return (try ChildProcess.spawn(argv, environment: env, setup: setup, newSession: true), report?.read) } catch {
            try? report?.read.close()
            throw KeychainStatus.notAvailable
        }
    }
}
