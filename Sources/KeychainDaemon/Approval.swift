import CProcess
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import KeychainSystem
import Synchronization

/// Presence checks for items whose access control asks for user presence, biometry, a watch
/// or the device passcode. The daemon runs the configured approval program, as ssh-agent does
/// for `-c` keys:
///
///     PROGRAM --reason presence|passphrase --label LABEL --uid UID --pid PID --exe EXE
///
/// Exit 0 approves; any other exit denies (errSecUserCanceled); no answer within the timeout
/// denies (errSecAuthFailed). For `passphrase` the program prints the vault passphrase on its
/// first line of output, and the daemon checks it. No program: errSecInteractionNotAllowed; the
/// same, without running it, for an access control with applicationPassword (`approvable`).
final class ApprovalAgent: Sendable {
    struct Settings {
        var program: String?
        var timeout = 30
        /// Seconds an approval lasts per (uid, executable, item); 0 asks every time.
        var remember = 0
    }

    /// Until when (monotonic seconds) an approval holds, per (uid, executable, item).
    private let remembered = Mutex<[String: Double]>([:])

    static func settings(of vault: Vault) -> Settings {
        func text(_ name: String) -> String? {
            (try? vault.setting(name)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
        }
        var s = Settings()
        if let p = text("approval-program"), !p.isEmpty { s.program = p }
        // Clamped: a value stored before the bounds existed must not overflow a deadline.
        if let t = text("approval-timeout").flatMap({ Int64($0) }) { s.timeout = Int(SettingLimits.approvalTimeout.clamp(t)) }
        if let r = text("approval-remember").flatMap({ Int64($0) }) { s.remember = Int(SettingLimits.approvalRemember.clamp(r)) }
        return s
    }

    /// Asks for one item. Returns `.success` when approved.
    /// - Parameter relayed: a relay's client (the SSH agent's ssh), added to the program's
    ///   arguments as `--for-uid`, `--for-pid`, `--for-exe` and `--for-host`, so it can say who
    ///   asks through the relay; the caller's own arguments stay, and so does what is remembered.
    func approve(ref: PersistentRef, label: String, control: AccessControl, caller: CallerIdentity,
                 relayed: RelayedUse? = nil, vault: Vault, settings: Settings) -> KeychainStatus {
        guard let program = settings.program else { return .interactionNotAllowed }
        // An application password cannot be given here: nobody is asked, the item stays closed.
        guard control.approvable else { return .interactionNotAllowed }
        // Remembered per user as well as per executable and item: another user running the same
        // program is asked again. A caller whose executable is unknown is never remembered.
        let key = caller.executable.map { "\(caller.uid)|\($0)|" + ref.bytes.map { String($0) }.joined(separator: ",") }
        let now = monotonicSeconds()
        let cached = relayed == nil && (key.map { key in remembered.withLock { ($0[key] ?? 0) > now } } ?? false)
        if cached { return .success }

        let presence = AccessControl.userPresence | AccessControl.biometryAny | AccessControl.biometryCurrentSet
            | AccessControl.companion
        let wantsPassphrase = control.flags & AccessControl.devicePasscode != 0 && control.flags & presence == 0
        var argv = [program, "--reason", wantsPassphrase ? "passphrase" : "presence", "--label", label,
                    "--uid", String(caller.uid), "--pid", String(caller.pid), "--exe", caller.executable ?? "?"]
        if let relayed {
            argv += ["--for-uid", String(relayed.uid), "--for-pid", String(relayed.pid), "--for-exe", relayed.executable ?? "?"]
            if let host = relayed.host { argv += ["--for-host", host] }
        }
        let outcome = run(argv, timeout: settings.timeout, captureLine: wantsPassphrase)
        var status: KeychainStatus
        switch outcome {
        case .timedOut, .failedToStart: status = .authFailed
        case .exited(let code, let line):
            if code != 0 { status = .userCanceled }
            else if wantsPassphrase { status = line.map { vault.verifyPassphrase($0) } == true ? .success : .authFailed }
            else { status = .success }
            line?.wipe()
        }
        // A relayed use's approval was for that client and host: it is not remembered for the relay.
        if status == .success && settings.remember > 0 && relayed == nil, let key {
            remembered.withLock { $0[key] = now + Double(settings.remember) }
        }
        return status
    }

    /// Asks the program for the vault's passphrase to unlock it, for a caller with none to give
    /// (the Secret Service's Unlock prompt): `PROGRAM --reason unlock --label KEYCHAIN ...`,
    /// which prints it on its first line. A program that does not know `unlock` exits non-zero.
    /// With an `asker` (the D-Bus caller the Secret Service relays for), `--uid`, `--pid` and
    /// `--exe` describe the asker, and `--via-uid`, `--via-pid`, `--via-exe` the socket caller.
    /// - Throws: as `approve` answers: interactionNotAllowed (no program), userCanceled (it
    ///   refused), authFailed (no answer in time, or no line).
    func askUnlock(caller: CallerIdentity, asker: CallerIdentity? = nil, settings: Settings) throws -> SecureBytes {
        guard let program = settings.program else { throw KeychainStatus.interactionNotAllowed }
        let who = asker ?? caller
        var argv = [program, "--reason", "unlock", "--label", "keychain",
                    "--uid", String(who.uid), "--pid", String(who.pid), "--exe", who.executable ?? "?"]
        if asker != nil {
            argv += ["--via-uid", String(caller.uid), "--via-pid", String(caller.pid), "--via-exe", caller.executable ?? "?"]
        }
        switch run(argv, timeout: settings.timeout, captureLine: true) {
        case .timedOut, .failedToStart:
            throw KeychainStatus.authFailed
        case .exited(let code, let line):
            guard code == 0, let line else {
                line?.wipe()
                throw code == 0 ? KeychainStatus.authFailed : KeychainStatus.userCanceled
            }
            return line
        }
    }

    /// This daemon's executable, read once: the one relay whose word on who asks is taken.
    private static let ownExecutable = ProcessFiles.executable(of: getpid())

    /// The `keychainfs` beside this daemon's executable (the client that runs `ssh-agent`).
    private static let ownClient = ownExecutable.map { exe in
        String(exe[..<(exe.lastIndex(of: "/") ?? exe.startIndex)]) + "/keychainfs"
    }

    /// Whether a caller's word on whom it relays for (useKey's `for-` options) is taken: the
    /// daemon's own executable or the `keychainfs` beside it, as the connection pinned them.
    /// Another program of the same user could name any client and host; these cannot be made
    /// to (the agent is not dumpable, so no same-user ptrace).
    static func isTrustedRelay(_ caller: CallerIdentity) -> Bool {
        guard let exe = caller.executable else { return false }
        return exe == ownExecutable || exe == ownClient
    }

    /// The caller a relay asks for: `for-uid` and `for-pid` of an unlock request, the identity
    /// the Secret Service pinned for its D-Bus caller (its executable unknown). Nil without them.
    /// - Throws: errSecParam when the socket caller is not this daemon's own executable (the
    ///   provider runs as it): nobody else may name another caller to the approval program.
    static func relayedAsker(_ relayed: RelayedCaller?, relay: CallerIdentity) throws -> CallerIdentity? {
        guard let relayed else { return nil }
        guard let own = ownExecutable, relay.executable == own else { throw KeychainStatus.param }
        return CallerIdentity(pid: relayed.pid, uid: relayed.uid, gid: UInt32.max, groups: [], executable: nil)
    }

    enum Outcome { case exited(Int32, SecureBytes?), timedOut, failedToStart }

    /// Runs the program with no input, a minimal environment and, when asked, its first output
    /// line read into guarded memory.
    private func run(_ argv: [String], timeout: Int, captureLine: Bool) -> Outcome {
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else { return .failedToStart }
        _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)
        defer { close(pipeFDs[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        kcfs_spawn_actions_closefrom(&actions, 3)
        var cargs = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var cenv: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/local/bin:/usr/bin:/bin"), nil]
        defer { for p in cenv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, nil, &cargs, &cenv)
        close(pipeFDs[1])
        guard rc == 0 else { return .failedToStart }

        let deadline = monotonicSeconds() + Double(max(timeout, 1))
        var line: SecureBytes?
        if captureLine {
            var pfd = pollfd(fd: pipeFDs[0], events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, Int32(max(timeout, 1) * 1000)) > 0 {
                // Out of guarded memory, the line is not read: as if the program printed none.
                if let buf = try? SecureBytes(count: 4096) {
                    let n = buf.withUnsafeMutableBytes { read(pipeFDs[0], $0.baseAddress, 4096) }
                    if n > 0 {
                        let end = buf.withUnsafeBytes { b in (0..<n).first { b[$0] == 10 } ?? n }
                        line = try? buf.slice(0..<end)
                    }
                    buf.wipe()
                }
            }
        }
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if monotonicSeconds() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                line?.wipe()
                return .timedOut
            }
            usleep(5_000)
        }
        // Exited normally with a code, or killed by a signal (a denial).
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return .exited(code, line)
    }
}
