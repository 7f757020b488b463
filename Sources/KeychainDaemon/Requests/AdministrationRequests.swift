import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol

/// The vault's own operations: ping, info, lock and unlock, passphrase and settings, the audit
/// log, integrity checks, watchers, backups and stop.
struct AdministrationRequests: RequestFamily {
    let daemon: Daemon

    func respond(_ request: Request, caller: CallerIdentity) throws -> Reply {
        switch request.operation {
        case .ping:
            return Reply(response: Response(info: ["protocol": .number(Int64(WireProtocol.version)), "pid": .number(Int64(getpid()))]))
        case .info:
            return Reply(response: Response(info: try info(for: caller)))
        case .lock:
            daemon.lockEverywhere(by: caller)
            log("locked by \(who(caller))")
        case .stop:
            try? audit(.stop, caller)  // a stop stops whether or not its line can be written
            try? daemon.auditLog?.sync()
            return Reply(response: Response(), after: .stop)
        case .verify:
            return Reply(response: Response(info: try verify(caller: caller)))
        default:
            throw KeychainStatus.badReq  // the typed operations have their own entry points
        }
        return Reply(response: Response())
    }

    /// `import`: a piece of a backup, or the purge of items bound to another machine.
    func importBackup(_ request: ImportRequest, caller: CallerIdentity) throws -> Response {
        let r = try daemon.importBackup(request, caller: caller, log: daemon.log)
        itemsChanged(ChangeEvent(kind: .update))
        return r
    }

    /// `watch`: the reply, then the connection is a watcher. Anyone entitled to a group may
    /// watch; only administrators see names.
    func watch(caller: CallerIdentity) throws -> Reply {
        guard daemon.events.hasRoom(for: caller, administrator: isAdministrator(caller)) else { throw KeychainStatus.allocate }
        return Reply(response: Response(info: ["names": .bool(isAdministrator(caller))]), after: .watch)
    }

    /// `unlock`, with the caller's passphrase or the approval program's.
    func unlock(_ request: UnlockRequest, caller: CallerIdentity) throws -> Response {
        switch request {
        case .passphrase(let passphrase):
            try unlock(passphrase, caller: caller)
        case .byApprovalProgram(let relayed):
            // Asked before the back-off and the one-unlock-at-a-time lock: it may take the
            // program's whole timeout, and what it prints is checked as any passphrase.
            let asker = try ApprovalAgent.relayedAsker(relayed, relay: caller)
            let passphrase = try daemon.approvals.askUnlock(caller: caller, asker: asker, settings: ApprovalAgent.settings(of: vault))
            defer { passphrase.wipe() }
            // The program answered for the asker the trusted relay named (a D-Bus caller): its
            // wrong passphrases delay its own prompts, not those of the relay's other callers.
            try unlock(passphrase, caller: caller, backOffUID: asker?.uid ?? caller.uid)
        }
        return Response()
    }

    /// Checks a passphrase once the caller's back-off has passed. A caller still in its back-off
    /// waits in the slow workers' queue, holding no thread; one check runs at a time, and the
    /// delay is checked again inside, for attempts of the same user that waited together.
    private func withBackOff<R>(for uid: UInt32, _ body: () throws -> R) throws -> R {
        let wait = try daemon.lockout.remainingDelayMicros(uid: uid)
        if wait > 0 { throw Deferral.retry(at: monotonicSeconds() + Double(wait) / 1e6) }
        return try daemon.unlockSerializer.withLock { _ in
            let again = try daemon.lockout.remainingDelayMicros(uid: uid)
            if again > 0 { throw Deferral.retry(at: monotonicSeconds() + Double(again) / 1e6) }
            return try body()
        }
    }

    /// - Parameter backOffUID: whose back-off the attempt waits for and counts in: the caller's,
    ///   or the asker's a trusted relay named.
    private func unlock(_ passphrase: SecureBytes, caller: CallerIdentity, backOffUID: UInt32? = nil) throws {
        let uid = backOffUID ?? caller.uid
        try withBackOff(for: uid) {
            // Counted as a failure before the check: an attempt that cannot be recorded is not checked.
            do {
                try daemon.lockout.recordAttempt(uid: uid)
            } catch {
                log("unlock refused for \(who(caller)): the back-off record cannot be written (\(error))")
                throw error
            }
            do {
                try vault.unlock(passphrase: passphrase)
            } catch KeychainStatus.authFailed {
                try? daemon.lockout.markFailed(uid: uid)
                try? audit(.unlockFailed, caller)  // the failure is counted either way
                log("unlock failed for \(who(caller))")
                throw KeychainStatus.authFailed
            }
            do {
                try daemon.lockout.reset(uid: uid)
            } catch {
                log("the back-off count of \(who(caller)) cannot be cleared (\(error)): it stays")
            }
            daemon.state.withLock {
                $0.lastActivity = monotonicSeconds()
                if $0.groupTable.groups.isEmpty, let t = try? AccessGroupTable.load(from: vault) { $0.groupTable = t }
            }
            daemon.openAuditLog()
            do {
                try audit(.unlock, caller)
            } catch {
                // An unlock the log cannot show does not stand.
                daemon.lockEverywhere(by: caller, trigger: "unlock-not-logged")
                log("unlock by \(who(caller)) undone: its audit line cannot be written (\(error))")
                throw error
            }
            daemon.events.publish(ChangeEvent(kind: .unlock))
            log("unlocked by \(who(caller))")
        }
    }

    func changePassphrase(_ request: PassphraseChange, caller: CallerIdentity) throws -> Response {
        let kdf = request.kdfParameters
        // The old passphrase is a guess like any unlock: the same back-off applies, and the
        // attempt is recorded before it is checked.
        let removed = try withBackOff(for: caller.uid) { () -> Int in
            try daemon.lockout.recordAttempt(uid: caller.uid)
            do {
                let n = try auditedChange(.passphraseChanged, caller) {
                    try vault.changePassphrase(from: request.old, to: request.new, kdf: kdf)
                }
                try? daemon.lockout.reset(uid: caller.uid)  // if this fails, the count stays: later attempts wait longer
                return n
            } catch KeychainStatus.authFailed {
                try? daemon.lockout.markFailed(uid: caller.uid)
                throw KeychainStatus.authFailed
            }
        }
        log("passphrase changed by \(who(caller))")
        return Response(info: ["deleted": .number(Int64(removed))])
    }

    /// Every numeric setting is bounded (`SettingLimits`, the CLI's ranges too), which decoding
    /// the request checked: nothing is stored unless all are valid.
    func setSettings(_ change: SettingsChange) throws -> Response {
        let timeout = change.lockTimeout.map { Int($0) }
        let approvalTimeout = change.approvalTimeout, remember = change.approvalRemember, auditMaxSize = change.auditMaxSize
        let program = change.approvalProgram
        if let t = timeout {
            try vault.setSetting("lock-timeout", Array(String(t).utf8))
            daemon.state.withLock { $0.idleTimeout = t; $0.lastActivity = monotonicSeconds() }
        }
        if let program { try vault.setSetting("approval-program", Array(program.utf8)) }
        if let n = approvalTimeout { try vault.setSetting("approval-timeout", Array(String(n).utf8)) }
        if let n = remember { try vault.setSetting("approval-remember", Array(String(n).utf8)) }
        if let n = auditMaxSize {
            try vault.setSetting("audit-max-size", Array(String(n).utf8))
            daemon.auditLog?.setMaxSize(n)
        }
        return Response()
    }

    private func verify(caller: CallerIdentity) throws -> Fields {
        let report = try vault.verify()
        var info: Fields = ["checked": .number(Int64(report.checked)), "locked": .number(Int64(report.locked)),
                                "other-device": .number(Int64(report.otherDevice)),
                                "damaged": .string(report.damaged.joined(separator: "\n"))]
        if let log = daemon.auditLog {
            let (lines, _, bad) = log.verify()
            info["audit-lines"] = .number(Int64(lines))
            if let bad {
                info["audit-first-bad"] = .number(Int64(bad.line))
                info["audit-first-bad-file"] = .string(bad.file)
            }
        }
        try? audit(.verify, caller, report.damaged.isEmpty ? "ok" : "\(report.damaged.count) damaged")
        return info
    }

    private func info(for caller: CallerIdentity) throws -> Fields {
        // Callers with no group learn only that a daemon runs and whether it is locked.
        guard isAdministrator(caller) || !entitledGroups(caller).isEmpty else {
            return ["state": .string(vault.lockState.rawValue), "pid": .number(Int64(getpid())), "groups": .string("")]
        }
        let i = try vault.info()
        let (timeout, idle) = daemon.state.withLock { ($0.idleTimeout, monotonicSeconds() - $0.lastActivity) }
        var out: Fields = [
            "path": .string(daemon.vaultPath), "state": .string(i.lockState.rawValue),
            "passphrase": .bool(i.hasPassphrase), "format": .number(Int64(i.formatVersion)),
            "kdf-ops": .number(Int64(i.kdf.opsLimit)), "kdf-mem": .number(Int64(i.kdf.memLimit)),
            "items": .number(Int64(i.itemCount)), "other-device": .number(Int64(i.itemsBoundToOtherDevice)),
            "lock-timeout": .number(Int64(timeout)), "pid": .number(Int64(getpid())),
            "groups": .string(entitledGroups(caller).joined(separator: ",")),
        ]
        for p in ProtectionClass.allCases { out["count." + p.rawValue] = .number(Int64(i.itemsByProtection[p] ?? 0)) }
        if timeout > 0 && i.lockState == .unlocked { out["locks-in"] = .number(Int64(max(0, Double(timeout) - idle))) }
        if isAdministrator(caller) {
            let current = daemon.state.withLock { $0.mounts.filter { !$0.hasEnded } }
            out["mounts"] = .string(current.map { "\($0.mountpoint) (\($0.options.description))" }.joined(separator: "\n"))
            if let (line, chain) = daemon.auditLog?.headLine() {
                out["audit-lines"] = .number(line)
                out["audit-head"] = .string(chain)
            }
        }
        return out
    }
}
