import CProcess
import Dispatch
import Glibc
import KeychainCore
import KeychainCrypto
import KeychainFS
import KeychainAccess
import KeychainProtocol
import SQLiteStore

/// The keychainfs daemon (our securityd): one per vault. Holds the unlocked keys, serves the
/// socket, and decides every request by the caller's kernel credentials.
public final class Daemon: @unchecked Sendable {
    let vault: Vault
    let vaultPath: String
    let socketPath: String
    let lockout: Lockout
    let ownerUID = geteuid()
    let ownerGID = getegid()
    private let state = PThreadMutex()
    private var groupTable: AccessGroupTable
    private var lastActivity = monotonicSeconds()
    private var idleTimeout = 0
    private let unlockSerializer = PThreadMutex()
    private var listener: Int32 = -1
    private var mounts: [MountServer] = []
    private var auditLog: AuditLog?
    private let approvals = ApprovalAgent()
    let events = EventHub()

    init(vault: Vault, vaultPath: String) throws {
        self.vault = vault
        self.vaultPath = vaultPath
        self.socketPath = Paths.socket(forVault: vaultPath)
        self.lockout = Lockout(path: Paths.lockoutFile(forVault: vaultPath))
        self.groupTable = (try? AccessGroupTable.load(from: vault)) ?? AccessGroupTable(groups: [])
        if let t = try vault.setting("lock-timeout"), let n = Int64(String(decoding: t, as: UTF8.self)) {
            idleTimeout = Int(SettingLimits.lockTimeout.clamp(n))  // a value stored before the bound
        }
        openAuditLog()
    }

    /// The audit log lives beside the vault (`VAULT.audit`); its chain key needs the index key,
    /// so on another machine it starts at the first unlock.
    func openAuditLog() {
        guard state.withLock({ auditLog == nil }), let key = try? vault.derivedKey(purpose: "audit") else { return }
        let log = AuditLog(path: vaultPath + ".audit", key: key)
        state.withLock { auditLog = log }
    }

    public func audit(_ event: String, caller: CallerIdentity, detail: String) {
        state.withLock { auditLog }?.record(event, caller: caller, detail: detail)
    }

    func audit(_ event: String, _ caller: CallerIdentity?, _ detail: String = "-") {
        state.withLock { auditLog }?.record(event, caller: caller, detail: detail)
    }

    public func audit(_ event: String, caller: CallerIdentity, item ref: PersistentRef) {
        state.withLock { auditLog }?.record(event, caller: caller, item: ref)
    }

    public func auditRepeatable(_ event: String, caller: CallerIdentity, item ref: PersistentRef) {
        state.withLock { auditLog }?.recordRepeatable(event, caller: caller, item: ref)
    }

    /// Runs the daemon in the foreground until `stop`, SIGTERM or SIGINT. Returns an exit status.
    public static func run(vaultPath: String, log: @escaping @Sendable (String) -> Void) -> Int32 {
        hardenProcess()
        // Claimed before the vault is opened: a second daemon must not touch the vault file or
        // its audit log (which a starting daemon repairs) while the first one writes them.
        if let refusal = claimVault(vaultPath, log: log) { return refusal }
        let device: DeviceKey
        let vault: Vault
        do {
            device = try DeviceKey.loadOrCreate()
            vault = try Vault.open(at: vaultPath, deviceKey: device)
        } catch let e as VaultFileError {
            log("cannot open vault: \(e.description)")
            return e.status.exitCode
        } catch {
            log("cannot open vault: \(error)")
            return KeychainStatus.io.exitCode
        }
        do {
            let daemon = try Daemon(vault: vault, vaultPath: vaultPath)
            return daemon.serve(log: log)
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

    /// Takes the vault's one-daemon lock (held for the daemon's life, released by the kernel),
    /// after checking the runtime directory. Returns the exit status to stop with, or nil.
    static func claimVault(_ vaultPath: String, log: @Sendable (String) -> Void) -> Int32? {
        let socketPath = Paths.socket(forVault: vaultPath)
        let dir = String(socketPath[..<socketPath.lastIndex(of: "/")!])
        mkdir(dir, 0o755)
        // The directory holds the socket and the back-off count: only we may change it.
        var st = stat()
        guard lstat(dir, &st) == 0, st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(), st.st_mode & 0o022 == 0 else {
            log("refusing runtime directory \(dir): it must be a directory of uid \(geteuid()) that others cannot write")
            return KeychainStatus.io.exitCode
        }
        let lockFD = open(socketPath + ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        // A daemon that was just stopped may still be exiting: give it two seconds.
        var locked = lockFD >= 0 && flock(lockFD, LOCK_EX | LOCK_NB) == 0
        for _ in 0..<40 where !locked && lockFD >= 0 {
            if let probe = try? UnixSocket.connect(to: socketPath) { close(probe); break }  // a live one: give up
            usleep(50_000)
            locked = flock(lockFD, LOCK_EX | LOCK_NB) == 0
        }
        guard locked else {
            log("a daemon is already serving \(vaultPath) at \(socketPath)")
            return 1  // clients take this to mean "wait for the other daemon" (DaemonClient.anotherDaemonServes)
        }
        return nil  // the descriptor stays open, and the lock held, until the process ends
    }

    func serve(log: @escaping @Sendable (String) -> Void) -> Int32 {
        do {
            listener = try UnixSocket.listen(at: socketPath, mode: 0o666)  // the daemon decides, not the mode
        } catch {
            log("cannot listen at \(socketPath)")
            return KeychainStatus.io.exitCode
        }
        log("serving \(vaultPath) at \(socketPath) (pid \(getpid()))")
        notifyReady()

        signal(SIGUSR1, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        let queue = DispatchQueue(label: "keychainfs.daemon.events")
        let usr1 = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: queue)
        usr1.setEventHandler { [self] in
            lockEverywhere(trigger: "SIGUSR1")
            log("locked by SIGUSR1")
        }
        usr1.resume()
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
            let (timeout, idle) = state.withLock { (idleTimeout, monotonicSeconds() - lastActivity) }
            if timeout > 0 && idle >= Double(timeout) && vault.lockState == .unlocked {
                lockEverywhere(trigger: "idle")
                log("locked after \(timeout) s idle")
            }
        }
        timer.resume()
        retained.append(usr1)
        retained.append(timer)

        while true {
            let fd = kcfs_accept_cloexec(listener)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if listener < 0 { return 0 }
                log("accept failed: errno \(errno)")
                return KeychainStatus.io.exitCode
            }
            DispatchQueue.global().async { [self] in self.connection(fd, log: log) }
        }
    }

    private var retained: [DispatchSourceProtocol] = []

    /// Removes the socket and exits; the keys are wiped by process exit (guarded pages are
    /// unmapped) after an explicit lock.
    func shutdown() -> Never {
        unlink(socketPath)
        vault.lock()
        for m in state.withLock({ mounts }) { m.unmount() }
        exit(0)
    }

    /// Locks the vault and makes its WhenUnlocked files vanish from every mount before returning.
    func lockEverywhere(by caller: CallerIdentity? = nil, trigger: String = "request") {
        vault.lock()
        for m in state.withLock({ mounts }) { m.vaultDidLock() }
        events.publish(ChangeEvent(kind: "lock"))
        state.withLock { auditLog }?.flushRepeats()  // the reads before the lock come before its line
        audit("lock", caller, trigger)
        state.withLock { auditLog }?.sync()
    }

    /// After a change, drop what the kernel cached so every mount shows it at once, tell the
    /// watchers, and run the `on_change` commands of the mounts that show the item.
    func itemsChanged(_ event: ChangeEvent? = nil) {
        let current = state.withLock { mounts }
        for m in current {
            // A change that names its item drops just those names; others drop everything.
            if let touched = event?.touched {
                for name in touched { m.invalidate(service: name.service, account: name.account) }
            } else {
                m.invalidateAll()
            }
        }
        guard let event else { return }
        events.publish(event)
        for m in current {
            guard let command = m.options.onChange else { continue }
            runChangeCommand(command, event: event, mountpoint: m.mountpoint)
        }
    }

    private func connection(_ fd: Int32, log: @escaping @Sendable (String) -> Void) {
        defer { close(fd) }
        guard let caller = try? CallerIdentity.of(socket: fd) else { return }
        while let payload = try? Frame.read(from: fd) {
            let response: Response
            var stopAfter = false
            do {
                let request = try Request.decode(payload)
                payload.wipe()
                stopAfter = request.operation == .stop
                response = handle(request, caller: caller, log: log)
                if response.status != .success { stopAfter = false }
                if request.operation == .watch && response.status == .success {
                    // From now on this connection only receives events, until the client closes it.
                    let out = response.encoded()
                    guard (try? Frame.write(out, to: fd)) != nil else { return }
                    events.add(fd: fd, names: isAdministrator(caller), service: request.options["service"]?.stringValue,
                               account: request.options["account"]?.stringValue)
                    var byte: UInt8 = 0
                    while recv(fd, &byte, 1, 0) > 0 {}
                    events.remove(fd: fd)
                    return
                }
            } catch let status as KeychainStatus {
                response = Response(status: status)
            } catch {
                response = Response(status: .decode)
            }
            let out = response.encoded()
            guard (try? Frame.write(out, to: fd)) != nil else { return }
            out.wipe()
            if stopAfter {
                log("stopped by uid \(caller.uid)")
                shutdown()
            }
        }
    }

    // MARK: Requests

    public func entitledGroups(_ caller: CallerIdentity) -> [String] {
        state.withLock {
            if groupTable.groups.isEmpty {
                return AccessGroup(name: "default", owner: ownerUID, gid: ownerGID).entitles(caller) ? ["default"] : []
            }
            return groupTable.entitled(caller)
        }
    }

    public func writableGroups(_ caller: CallerIdentity) -> [String] {
        state.withLock {
            if groupTable.groups.isEmpty {
                return AccessGroup(name: "default", owner: ownerUID, gid: ownerGID).entitlesWriting(caller) ? ["default"] : []
            }
            return groupTable.writable(caller)
        }
    }

    /// The daemon's own user and root administer the vault.
    func isAdministrator(_ caller: CallerIdentity) -> Bool { caller.uid == 0 || caller.uid == ownerUID }

    func handle(_ request: Request, caller: CallerIdentity, log: @Sendable (String) -> Void) -> Response {
        // Built only for the requests that log: lookups, the common case, do not.
        var who: String { "uid=\(caller.uid) pid=\(caller.pid) exe=\(printable(caller.executable ?? "?"))" }
        defer {
            // Only requests from entitled callers keep the vault awake; anyone else's would let
            // them hold off the idle lock.
            if request.operation != .ping && request.operation != .info && !entitledGroups(caller).isEmpty {
                state.withLock { lastActivity = monotonicSeconds() }
            }
        }
        do {
            switch request.operation {
            case .ping:
                return Response(info: ["protocol": .number(Int64(WireProtocol.version)), "pid": .number(Int64(getpid()))])
            case .info:
                return Response(info: try info(for: caller))
            case .unlock:
                guard let pass = request.secrets.first else { throw KeychainStatus.param }
                try unlock(pass, caller: caller, who: who, log: log)
                return Response()
            case .lock:
                guard isAdministrator(caller) || !entitledGroups(caller).isEmpty else { throw KeychainStatus.authFailed }
                lockEverywhere(by: caller)
                log("locked by \(who)")
                return Response()
            case .add:
                let r = try vault.add(request.query, secret: request.secrets.first, accessGroups: writableGroups(caller))
                itemsChanged(ChangeEvent(kind: "add", query: request.query))
                audit("add", caller)
                log("add \(who)")
                return Response(result: r)
            case .copyMatching:
                let groups = entitledGroups(caller)
                let skip = request.query["u_AuthUI"] == "u_AuthUIS"
                let result: QueryResult
                do {
                    // Most searches touch no presence-gated item: one search, no approval round.
                    result = try vault.copyMatching(request.query, accessGroups: groups, skipUnapproved: skip)
                } catch KeychainStatus.interactionNotAllowed {
                    let approved = try approvePresence(request.query, groups: groups, caller: caller)
                    guard !approved.isEmpty else { throw KeychainStatus.interactionNotAllowed }
                    result = try vault.copyMatching(request.query, accessGroups: groups, approved: approved, skipUnapproved: skip)
                }
                if case .bool(true)? = request.query["r_Data"] { audit("read", caller) }
                else if case .number(1)? = request.query["r_Data"] { audit("read", caller) }
                return Response(result: result)
            case .update:
                try readableButNotWritable(request.query, caller) {
                    try vault.update(request.query, changes: request.changes, secret: request.secrets.first,
                                     accessGroups: writableGroups(caller))
                }
                itemsChanged(ChangeEvent(kind: "update", query: request.query, changes: request.changes))
                audit("update", caller)
                log("update \(who)")
                return Response()
            case .delete:
                try readableButNotWritable(request.query, caller) {
                    try vault.delete(request.query, accessGroups: writableGroups(caller))
                }
                itemsChanged(ChangeEvent(kind: "delete", query: request.query))
                audit("delete", caller)
                log("delete \(who)")
                return Response()
            case .changePassphrase:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                guard request.secrets.count == 2 else { throw KeychainStatus.param }
                var kdf: KDFParameters?
                if case .string(let name)? = request.options["kdf"] {
                    guard let p = KDFParameters(presetName: name) else { throw KeychainStatus.param }
                    kdf = p
                }
                // The old passphrase is a guess like any unlock: the same back-off applies.
                let removed = try withBackOff(for: caller) { () -> Int in
                    do {
                        let n = try vault.changePassphrase(from: request.secrets[0], to: request.secrets[1], kdf: kdf)
                        lockout.reset(uid: caller.uid)
                        return n
                    } catch KeychainStatus.authFailed {
                        lockout.recordFailure(uid: caller.uid)
                        throw KeychainStatus.authFailed
                    }
                }
                audit("passphrase-changed", caller)
                log("passphrase changed by \(who)")
                return Response(info: ["deleted": .number(Int64(removed))])
            case .setSettings:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                if let t = request.options["lock-timeout"]?.integerValue {
                    guard SettingLimits.lockTimeout.contains(t) else { throw KeychainStatus.param }
                    try vault.setSetting("lock-timeout", Array(String(t).utf8))
                    state.withLock { idleTimeout = Int(t); lastActivity = monotonicSeconds() }
                }
                if case .string(let program)? = request.options["approval-program"] {
                    guard program.isEmpty || program.hasPrefix("/") else { throw KeychainStatus.param }
                    try vault.setSetting("approval-program", Array(program.utf8))
                }
                for name in ["approval-timeout", "approval-remember"] {
                    if let n = request.options[name]?.integerValue {
                        let range = name == "approval-timeout" ? SettingLimits.approvalTimeout : SettingLimits.approvalRemember
                        guard range.contains(n) else { throw KeychainStatus.param }
                        try vault.setSetting(name, Array(String(n).utf8))
                    }
                }
                return Response()
            case .groupAdd, .groupSet, .groupRemove:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                try changeGroups(request)
                itemsChanged()
                audit("groups-changed", caller, "\(request.operation)")
                log("groups changed by \(who)")
                return Response()
            case .groupList:
                let visible = state.withLock { groupTable.groups }.filter { isAdministrator(caller) || $0.entitles(caller) }
                return Response(result: .array(visible.map { .item(FoundItem(attributes: $0.record, secret: nil, persistentRef: nil)) }))
            case .stop:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                audit("stop", caller)
                state.withLock { auditLog }?.sync()
                return Response()
            case .audit:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                guard let log = state.withLock({ auditLog }) else { throw KeychainStatus.interactionNotAllowed }
                if case .bool(true)? = request.options["verify"] {
                    let (lines, bad) = log.verify()
                    var info: Attributes = ["lines": .number(Int64(lines))]
                    if let bad { info["first-bad"] = .number(Int64(bad)) }
                    return Response(info: info)
                }
                return Response(info: ["log": .string(log.contents())])
            case .export:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                return try exportBackup(request, caller: caller, log: log)
            case .import:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                let r = try importBackup(request, caller: caller, log: log)
                itemsChanged(ChangeEvent(kind: "update"))
                return r
            case .verify:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                let report = try vault.verify()
                var info: Attributes = ["checked": .number(Int64(report.checked)), "locked": .number(Int64(report.locked)),
                                        "other-device": .number(Int64(report.otherDevice)),
                                        "damaged": .string(report.damaged.joined(separator: "\n"))]
                if let log = state.withLock({ auditLog }) {
                    let (lines, bad) = log.verify()
                    info["audit-lines"] = .number(Int64(lines))
                    if let bad { info["audit-first-bad"] = .number(Int64(bad)) }
                }
                audit("verify", caller, report.damaged.isEmpty ? "ok" : "\(report.damaged.count) damaged")
                return Response(info: info)
            case .watch:
                // Anyone entitled to a group may watch; only administrators see names.
                guard isAdministrator(caller) || !entitledGroups(caller).isEmpty else { throw KeychainStatus.authFailed }
                return Response(info: ["names": .bool(isAdministrator(caller))])
            case .mount:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                guard case .string(let point)? = request.options["mountpoint"] else { throw KeychainStatus.param }
                let options = try MountOptions(parsing: request.options["options"]?.stringValue ?? "")
                var st = stat()
                guard stat(point, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { throw KeychainStatus.param }
                // Mounts that umount(8) ended are forgotten first.
                guard state.withLock({ mounts.removeAll { $0.hasEnded }; return !mounts.contains { $0.mountpoint == point } })
                else { throw KeychainStatus.duplicateItem }
                let server = MountServer(mountpoint: point, options: options, vault: vault, policy: self)
                try server.start()
                state.withLock { mounts.append(server) }
                audit("mount", caller, options.description)
                log("mounted at \(point) (\(options.description)) by \(who)")
                return Response()
            case .unmount:
                guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
                guard case .string(let point)? = request.options["mountpoint"] else { throw KeychainStatus.param }
                guard let server = state.withLock({ () -> MountServer? in
                    guard let i = mounts.firstIndex(where: { $0.mountpoint == point }) else { return nil }
                    return mounts.remove(at: i)
                }) else { throw KeychainStatus.itemNotFound }
                server.unmount()
                audit("unmount", caller)
                log("unmounted \(point) by \(who)")
                return Response()
            }
        } catch let status as KeychainStatus {
            if status == .missingEntitlement || (status == .authFailed && request.operation != .unlock && request.operation != .changePassphrase) {
                log("denied \(request.operation) \(who)")
                audit("denied", caller, "\(request.operation)")
            }
            if status == .decode { audit("damaged", caller, "\(request.operation)") }
            return Response(status: status)
        } catch let e as VaultFileError {
            return Response(status: e.status)
        } catch is MountOptionError {
            return Response(status: .param)
        } catch let e as SQLiteError where e.isDiskFull {
            return Response(status: .diskFull)
        } catch {
            return Response(status: .io)
        }
    }

    /// Before a search that returns secrets: finds the presence-gated items it would return and
    /// asks the approval program about each (never with the vault's lock held). A denial ends
    /// the search with the program's status; `u_AuthUIF` / `u_AuthUIS` ask nobody.
    private func approvePresence(_ query: Attributes, groups: [String], caller: CallerIdentity) throws -> Set<PersistentRef> {
        let wantsData: Bool
        switch query["r_Data"] {
        case .bool(let b)?: wantsData = b
        case .number(let n)?: wantsData = n != 0
        default: wantsData = false
        }
        // kSecUseAuthenticationUIFail / Skip and kSecUseNoAuthenticationUI: ask nobody.
        let noUI: Bool
        switch query["u_NoAuthUI"] {
        case .bool(let b)?: noUI = b
        case .number(let n)?: noUI = n != 0
        default: noUI = false
        }
        guard wantsData, !noUI, query["u_AuthUI"] == nil || query["u_AuthUI"] == "u_AuthUIA" else { return [] }
        let settings = ApprovalAgent.settings(of: vault)
        guard settings.program != nil else { return [] }  // nobody to ask
        var probe = query.filter { !$0.key.hasPrefix("r_") }
        probe["r_Attributes"] = .bool(true)
        probe["r_PersistentRef"] = .bool(true)
        guard let found = try? vault.copyMatching(probe, accessGroups: groups) else { return [] }
        let items: [FoundItem]
        switch found {
        case .value(let v): items = v.item.map { [$0] } ?? []
        case .array(let a): items = a.compactMap(\.item)
        case .none: items = []
        }
        let gated = items.compactMap { item -> (PersistentRef, String, AccessControl)? in
            guard let c = item.attributes["accc"].flatMap(AccessControl.init), c.requiresPresence,
                  let bytes = item.persistentRef, let ref = PersistentRef(bytes: bytes) else { return nil }
            return (ref, item.attributes["labl"]?.stringValue ?? item.attributes["svce"]?.stringValue ?? "item", c)
        }
        guard !gated.isEmpty else { return [] }
        var approved = Set<PersistentRef>()
        for (ref, label, control) in gated {
            let status = approvals.approve(ref: ref, label: label, control: control, caller: caller, vault: vault, settings: settings)
            audit(status == .success ? "presence-approved" : "presence-denied", caller: caller, item: ref)
            if status == .interactionNotAllowed { return approved }  // no program: the engine refuses
            guard status == .success else { throw status }
            approved.insert(ref)
        }
        return approved
    }


    /// Runs a change over the caller's writable groups. When it finds nothing there but the
    /// caller can read a match, the answer is a missing entitlement, not "not found".
    private func readableButNotWritable(_ query: Attributes, _ caller: CallerIdentity, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch KeychainStatus.itemNotFound {
            var probe = query.filter { !$0.key.hasPrefix("m_") && !$0.key.hasPrefix("r_") }
            probe["m_Limit"] = "m_LimitOne"
            if (try? vault.copyMatching(probe, accessGroups: entitledGroups(caller))) != nil {
                throw KeychainStatus.missingEntitlement
            }
            throw KeychainStatus.itemNotFound
        }
    }

    /// Runs a passphrase check once the caller's back-off has passed. The wait happens outside
    /// the one-at-a-time section, so one user's failures never hold up another's unlock; the
    /// delay is checked again inside it, for attempts of the same user that waited together.
    private func withBackOff<R>(for caller: CallerIdentity, _ body: () throws -> R) throws -> R {
        while true {
            let wait = lockout.remainingDelayMicros(uid: caller.uid)
            if wait > 0 { usleep(UInt32(wait)) }
            let result: R? = try unlockSerializer.withLock {
                guard lockout.remainingDelayMicros(uid: caller.uid) == 0 else { return nil }
                return try body()
            }
            if let result { return result }
        }
    }

    private func unlock(_ passphrase: SecureBytes, caller: CallerIdentity, who: String, log: @Sendable (String) -> Void) throws {
        try withBackOff(for: caller) {
            do {
                try vault.unlock(passphrase: passphrase)
            } catch KeychainStatus.authFailed {
                lockout.recordFailure(uid: caller.uid)
                audit("unlock-failed", caller)
                log("unlock failed for \(who)")
                throw KeychainStatus.authFailed
            }
            lockout.reset(uid: caller.uid)
            state.withLock {
                lastActivity = monotonicSeconds()
                if groupTable.groups.isEmpty, let t = try? AccessGroupTable.load(from: vault) { groupTable = t }
            }
            openAuditLog()
            events.publish(ChangeEvent(kind: "unlock"))
            audit("unlock", caller)
            log("unlocked by \(who)")
        }
    }

    private func info(for caller: CallerIdentity) throws -> Attributes {
        // Callers with no group learn only that a daemon runs and whether it is locked.
        guard isAdministrator(caller) || !entitledGroups(caller).isEmpty else {
            return ["state": .string(vault.lockState.rawValue), "pid": .number(Int64(getpid())), "groups": .string("")]
        }
        let i = try vault.info()
        var out: Attributes = [
            "path": .string(vaultPath), "state": .string(i.lockState.rawValue),
            "passphrase": .bool(i.hasPassphrase), "format": .number(Int64(i.formatVersion)),
            "kdf-ops": .number(Int64(i.kdf.opsLimit)), "kdf-mem": .number(Int64(i.kdf.memLimit)),
            "items": .number(Int64(i.itemCount)), "other-device": .number(Int64(i.itemsBoundToOtherDevice)),
            "lock-timeout": .number(Int64(state.withLock { idleTimeout })), "pid": .number(Int64(getpid())),
            "groups": .string(entitledGroups(caller).joined(separator: ",")),
        ]
        for p in ProtectionClass.allCases { out["count." + p.rawValue] = .number(Int64(i.itemsByProtection[p] ?? 0)) }
        let (timeout, idle) = state.withLock { (idleTimeout, monotonicSeconds() - lastActivity) }
        if timeout > 0 && i.lockState == .unlocked { out["locks-in"] = .number(Int64(max(0, Double(timeout) - idle))) }
        if isAdministrator(caller) {
            let current = state.withLock { mounts.filter { !$0.hasEnded } }
            out["mounts"] = .string(current.map { "\($0.mountpoint) (\($0.options.description))" }.joined(separator: "\n"))
            if let (line, chain) = state.withLock({ auditLog })?.headLine() {
                out["audit-lines"] = .number(line)
                out["audit-head"] = .string(chain)
            }
        }
        return out
    }

    private func changeGroups(_ request: Request) throws {
        guard case .string(let name)? = request.options["name"], !name.isEmpty else { throw KeychainStatus.param }
        try state.withLock {
            var table = groupTable
            switch request.operation {
            case .groupAdd:
                guard table.group(named: name) == nil else { throw KeychainStatus.duplicateItem }
                var g = AccessGroup(name: name, owner: ownerUID, gid: ownerGID)
                apply(request.options, to: &g)
                table.groups.append(g)
            case .groupSet:
                guard let i = table.groups.firstIndex(where: { $0.name == name }) else { throw KeychainStatus.itemNotFound }
                apply(request.options, to: &table.groups[i])
            default:
                guard let i = table.groups.firstIndex(where: { $0.name == name }) else { throw KeychainStatus.itemNotFound }
                table.groups.remove(at: i)
            }
            try table.save(to: vault)
            groupTable = table
        }
    }

    private func apply(_ options: Attributes, to g: inout AccessGroup) {
        if let o = options["owner"]?.integerValue { g.owner = UInt32(truncatingIfNeeded: o) }
        if let gid = options["gid"]?.integerValue { g.gid = UInt32(truncatingIfNeeded: gid) }
        if let m = options["mode"]?.integerValue { g.mode = UInt32(truncatingIfNeeded: m) & 0o777 }
        if case .string(let exe)? = options["exe"] { g.executables = exe.isEmpty ? [] : exe.split(separator: "\n").map(String.init) }
    }
}

/// Control characters escaped, so a caller's executable path cannot forge log lines.
func printable(_ s: String) -> String {
    var out = ""
    for scalar in s.unicodeScalars {
        if scalar.value < 0x20 || scalar.value == 0x7f {
            out += "\\x" + String(scalar.value, radix: 16)
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}


extension Daemon: MountPolicy {
    public func group(named name: String) -> AccessGroup? {
        state.withLock {
            groupTable.groups.isEmpty && name == "default"
                ? AccessGroup(name: "default", owner: ownerUID, gid: ownerGID) : groupTable.group(named: name)
        }
    }

    public func allGroups() -> [String] {
        state.withLock { groupTable.groups.isEmpty ? ["default"] : groupTable.groups.map(\.name) }
    }

    public var directoryOwner: (uid: UInt32, gid: UInt32) { (ownerUID, ownerGID) }

    public func itemChanged(_ kind: String, service: [UInt8], account: [UInt8]?,
                            previous: (service: [UInt8], account: [UInt8]?)?) {
        // From a mount's own thread: tell the others on a queue, never from inside a kernel request.
        let event = ChangeEvent(kind: kind, service: service, account: account, previous: previous)
        DispatchQueue.global().async { [self] in itemsChanged(event) }
    }

    public func approvePresence(ref: PersistentRef, attributes: Attributes, caller: CallerIdentity) -> KeychainStatus {
        guard let control = attributes["accc"].flatMap(AccessControl.init) else { return .success }
        let label = attributes["labl"]?.stringValue ?? attributes["svce"]?.stringValue ?? "item"
        let status = approvals.approve(ref: ref, label: label, control: control, caller: caller, vault: vault,
                                       settings: ApprovalAgent.settings(of: vault))
        audit(status == .success ? "presence-approved" : "presence-denied", caller: caller, item: ref)
        return status
    }
}
