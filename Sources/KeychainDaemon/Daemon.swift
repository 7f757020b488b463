import KeychainSystem
import CProcess
import Dispatch
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainFS
import KeychainProtocol
import KeychainTPM
import Synchronization

/// The keychainfs daemon (our securityd): one per vault. Holds the unlocked keys, serves the
/// socket and the mounts, and decides every request by the caller's pinned kernel identity.
///
/// This file wires the parts together: the connection layer (`Connections/`), the request
/// handlers by family (`Requests/`), lock triggers and change notifications.
// Unchecked: `sync` and `retained` are set while the daemon starts, before any thread but the
// starting one can reach it, and never after; every other field is a let of a Sendable type.
public final class Daemon: @unchecked Sendable {
    let vault: Vault
    let vaultPath: String
    let socketPath: String
    let lockout: Lockout
    let ownerUID = geteuid()
    let ownerGID = getegid()
    let state: Locked<DaemonState>
    /// One passphrase check at a time: each costs Argon2id's memory.
    let unlockSerializer = Mutex(())
    /// One change of the access-group table at a time (group verbs, an import bringing groups),
    /// so none is lost to another's read-modify-write.
    let groupChanges = Mutex(())
    let approvals = ApprovalAgent()
    /// Private keys `useKey` opened, kept parsed until a lock or a change (Requests/OpenedKeys).
    let openedKeys = OpenedKeys()
    let events = EventHub()
    /// Each request's wait inside the daemon and its service time (`serviceTimes`).
    let serviceClock = ServiceClock()
    let log: @Sendable (String) -> Void
    /// Fleet sync (Sync/): set once at the end of `init`, never changed.
    private(set) var sync: SyncRunner!
    private var retained: [DispatchSourceProtocol] = []

    /// - Parameter lockoutPath: where failed unlocks are counted; by default in the vault's
    ///   runtime directory.
    init(vault: Vault, vaultPath: String, lockoutPath: String? = nil, log: @escaping @Sendable (String) -> Void) throws {
        self.vault = vault
        self.vaultPath = vaultPath
        self.socketPath = Paths.socket(forVault: vaultPath)
        self.lockout = Lockout(path: lockoutPath ?? Paths.lockoutFile(forVault: vaultPath))
        self.log = log
        var timeout = 0
        // A value stored before the range was enforced is brought into it.
        if let t = try vault.setting("lock-timeout"), let n = Int64(String(decoding: t, as: UTF8.self)) {
            timeout = Int(SettingLimits.lockTimeout.clamp(n))
        }
        state = Locked(DaemonState(groupTable: (try? AccessGroupTable.load(from: vault)) ?? AccessGroupTable(groups: []),
                                  lastActivity: monotonicSeconds(), idleTimeout: timeout))
        openAuditLog()
        sync = SyncRunner(vault: vault, log: log) { [weak self] kind, change in self?.syncApplied(kind, change) }
    }

    /// Runs the daemon in the foreground until `stop`, SIGTERM or SIGINT. Returns an exit status,
    /// which a daemon that did not start also writes to its starter's report (`StartReport`).
    public static func run(vaultPath: String, log: @escaping @Sendable (String) -> Void) -> Int32 {
        StartReport.adopt()
        let status = start(vaultPath: vaultPath, log: log)
        StartReport.exiting(status)
        return status
    }

    private static func start(vaultPath: String, log: @escaping @Sendable (String) -> Void) -> Int32 {
        hardenProcess()
        // Claimed before the vault is opened: a second daemon must not touch the vault file or
        // its audit log (which a starting daemon repairs) while the first one writes them.
        if let refusal = VaultClaim.claim(vaultPath, log: log) { return refusal }
        let vault: Vault
        do {
            vault = try Vault.open(at: vaultPath, deviceKey: try DeviceKeyStore.load(forVault: vaultPath))
            // The claim makes this process the vault's only writer: its readers may keep their
            // snapshots until it commits.
            vault.keepsReadSnapshots = true
        } catch let e as DeviceKeyError {
            log("cannot open vault: \(e.description)")
            return e.status.exitCode
        } catch let e as VaultFileError {
            log("cannot open vault: \(e.description)")
            return e.status.exitCode
        } catch {
            log("cannot open vault: \(error)")
            return KeychainStatus.io.exitCode
        }
        do {
            let daemon = try Daemon(vault: vault, vaultPath: vaultPath, log: log)
            return daemon.serve()
        } catch {
            log("cannot start: \(error)")
            return KeychainStatus.io.exitCode
        }
    }

    /// No core dumps, no ptrace by the same user, so keys cannot be read out of the process.
    static func hardenProcess() {
        if kcfs_harden_process() != 0 {
            let message = Array("keychainfs-daemon: cannot make the process non-dumpable\n".utf8)
            _ = message.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
            exit(KeychainStatus.internalComponent.exitCode)
        }
    }

    func serve() -> Int32 {
        // Before the socket answers: a `mount` that comes next finds the mounts as they will be.
        restoreMounts()
        let listener: Int32
        do {
            listener = try UnixSocket.listen(at: socketPath, mode: 0o666, refusingDescriptors: true)  // the daemon decides, not the mode
        } catch {
            log("cannot listen at \(socketPath)")
            return KeychainStatus.io.exitCode
        }
        let server: ConnectionServer
        do {
            server = try ConnectionServer(listener: listener, handler: self, limits: .standard(ownerUID: ownerUID))
        } catch {
            log("cannot start the connection loop: \(error)")
            return KeychainStatus.io.exitCode
        }
        do {
            try server.start()
        } catch {
            log("cannot start the daemon's threads")
            return KeychainStatus.internalComponent.exitCode
        }
        installTriggers()
        if !sync.start() { log("cannot start fleet sync") }
        log("serving \(vaultPath) at \(socketPath) (pid \(getpid()))")
        notifyReady()
        server.wait()  // the daemon ends with `exit` (stop, SIGTERM, SIGINT)
    }

    /// SIGUSR1 locks, SIGTERM and SIGINT stop, and a one-second timer applies the idle lock.
    private func installTriggers() {
        signal(SIGUSR1, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        let queue = DispatchQueue(label: "keychainfs.daemon.triggers")
        let usr1 = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: queue)
        usr1.setEventHandler { [self] in
            lockEverywhere(trigger: "SIGUSR1")
            log("locked by SIGUSR1")
        }
        usr1.resume()
        retained.append(usr1)
        for sig in [SIGTERM, SIGINT] {
            let src = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            src.setEventHandler { [self] in
                log("stopping on signal \(sig)")
                shutdown()
            }
            src.resume()
            retained.append(src)
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [self] in
            let (timeout, idle) = state.withLock { ($0.idleTimeout, monotonicSeconds() - $0.lastActivity) }
            if timeout > 0 && idle >= Double(timeout) && vault.lockState == .unlocked {
                lockEverywhere(trigger: "idle")
                log("locked after \(timeout) s idle")
            }
        }
        timer.resume()
        retained.append(timer)
    }

    /// Removes the socket and exits; the keys are wiped by process exit (guarded pages are
    /// unmapped) after an explicit lock.
    func shutdown() -> Never {
        unlink(socketPath)
        sync?.engine.saveCounters()  // a round writes them at most every 30 s
        vault.lock()
        recordStoppedMounts()
        for m in state.withLock({ $0.mounts }) { m.unmount() }
        exit(0)
    }

    // MARK: Audit

    /// The audit log lives beside the vault (`VAULT.audit`); its chain key needs the index key,
    /// so on another machine it starts at the first unlock.
    func openAuditLog() {
        guard state.withLock({ $0.auditLog == nil }), let key = try? vault.derivedKey(purpose: "audit") else { return }
        let log = AuditLog(path: vaultPath + ".audit", key: key)
        if let text = try? vault.setting("audit-max-size"), let n = Int64(String(decoding: text, as: UTF8.self)) {
            log.setMaxSize(n)
        }
        state.withLock { $0.auditLog = log }
    }

    var auditLog: AuditLog? { state.withLock { $0.auditLog } }

    /// The audit calls throw errSecDiskFull or errSecIO when the line could not be written;
    /// each caller decides whether its request is refused (`try`) or goes on (`try?`).
    public func audit(_ event: AuditEvent, caller: CallerIdentity, detail: String) throws {
        try auditLog?.record(event, caller: caller, detail: detail)
    }

    func audit(_ event: AuditEvent, _ caller: CallerIdentity?, _ detail: String = "-") throws {
        try auditLog?.record(event, caller: caller, detail: detail)
    }

    public func audit(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef) throws {
        try auditLog?.record(event, caller: caller, item: ref)
    }

    public func audit(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef, note: String) throws {
        try auditLog?.record(event, caller: caller, item: ref, note: note)
    }

    public func auditRepeatable(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef) throws {
        try auditLog?.recordRepeatable(event, caller: caller, item: ref)
    }

    // MARK: Locks and changes

    /// Locks the vault and makes its WhenUnlocked files vanish from every mount before returning.
    func lockEverywhere(by caller: CallerIdentity? = nil, trigger: String = "request") {
        vault.lock()
        openedKeys.removeAll()
        for m in state.withLock({ $0.mounts }) { m.vaultDidLock() }
        events.publish(ChangeEvent(kind: .lock))
        // A lock locks whether or not its line can be written.
        try? auditLog?.flushRepeats()  // the reads before the lock come before its line
        try? audit(.lock, caller, trigger)
        try? auditLog?.sync()
    }

    /// After a change, drop what the kernel cached so every mount shows it at once, tell the
    /// watchers, and run the `on_change` commands of the mounts that show the item.
    func itemsChanged(_ event: ChangeEvent? = nil) { itemsChanged(event, mountsTold: false) }

    /// `mountsTold`: a mount's own change, which the other mounts already have (`itemChanged`).
    /// `fromSync`: a change fleet sync applied, which has nothing to send back to the server.
    func itemsChanged(_ event: ChangeEvent?, mountsTold: Bool, fromSync: Bool = false) {
        openedKeys.removeAll()
        // A new host applies a million changes in a row; a wake-up per change would only make
        // the sync thread look again at a log it is reading.
        if !fromSync { sync.kick() }
        let current = state.withLock { $0.mounts }
        for m in current where !mountsTold {
            // A change that names its item drops just those names; others drop everything.
            if let touched = event?.touched {
                for name in touched { m.invalidate(service: name.service, account: name.account) }
            } else {
                m.invalidateAll()
            }
        }
        guard let event else { return }
        events.publish(event, entitled: entitledGroups)
        for m in current {
            guard let command = m.options.onChange, m.shows(groups: event.groups) else { continue }
            runChangeCommand(command, event: event, mountpoint: m.mountpoint)
        }
    }

    // MARK: Callers

    public func entitledGroups(_ caller: CallerIdentity) -> [String] {
        state.withLock {
            if $0.groupTable.groups.isEmpty {
                return AccessGroup(name: "default", owner: ownerUID, gid: ownerGID).entitles(caller) ? ["default"] : []
            }
            return $0.groupTable.entitled(caller)
        }
    }

    public func writableGroups(_ caller: CallerIdentity) -> [String] {
        state.withLock {
            if $0.groupTable.groups.isEmpty {
                return AccessGroup(name: "default", owner: ownerUID, gid: ownerGID).entitlesWriting(caller) ? ["default"] : []
            }
            return $0.groupTable.writable(caller)
        }
    }

    /// The daemon's own user and root administer the vault.
    func isAdministrator(_ caller: CallerIdentity) -> Bool { caller.uid == 0 || caller.uid == ownerUID }
}

/// Escaped as the audit log escapes a field (`AuditLog.appendEscaped`: `\\`, `\x0a`), so a
/// caller's executable path can neither forge a log line nor read as another path.
func printable(_ s: String) -> String {
    var out: [UInt8] = []
    AuditLog.appendEscaped(s, to: &out)
    return String(decoding: out, as: UTF8.self)
}

