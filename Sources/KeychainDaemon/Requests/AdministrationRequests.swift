import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol

/// The vault's own operations: ping, info, lock and unlock, passphrase and settings, the audit
/// log, integrity checks, watchers, backups and stop.
struct AdministrationRequests: RequestFamily {
    let context: RequestContext

    static func ping() -> Outcome { .reply(PingReply(pid: Int64(getpid()))) }

    func lock() -> Outcome {
        context.control.lockEverywhere(by: caller, trigger: "request")
        log("locked by \(who(caller))")
        return .reply(StatusReply())
    }

    func stop() -> Outcome {
        try? audit(.stop, caller)  // a stop stops whether or not its line can be written
        try? context.control.auditLog?.sync()
        return .reply(StatusReply(), after: .stop)
    }

    /// `watch`: the reply, then the connection is a watcher. Anyone entitled to a group may
    /// watch; only administrators see names.
    func watch() throws -> Outcome {
        guard context.control.events.hasRoom(for: caller, administrator: groups.isAdministrator) else { throw KeychainStatus.allocate }
        return .reply(WatchStarted(names: groups.isAdministrator), after: .watch)
    }

    /// `serviceTimes`: the owner's and root's requests apart from everyone else's.
    func serviceTimes(_ request: ServiceTimesRequest) -> Outcome {
        .reply(context.control.serviceClock.summary(reset: request.reset))
    }

    /// `unlock`, with the caller's passphrase or the approval program's.
    func unlock(_ request: UnlockRequest) throws -> Outcome {
        switch request {
        case .passphrase(let passphrase):
            return try unlock(passphrase, backOffUID: caller.uid)
        case .byApprovalProgram(let relayed):
            // Asked before the back-off and the one-unlock-at-a-time lock: it may take the
            // program's whole timeout, and what it prints is checked as any passphrase.
            let asker = try ApprovalAgent.relayedAsker(relayed, relay: caller)
            let passphrase = try context.control.approvals.askUnlock(caller: caller, asker: asker,
                                                                     settings: ApprovalAgent.settings(of: vault))
            // The program answered for the asker the trusted relay named (a D-Bus caller): its
            // wrong passphrases delay its own prompts, not those of the relay's other callers.
            return try unlock(passphrase, backOffUID: asker?.uid ?? caller.uid) { passphrase.wipe() }
        }
    }

    /// Runs `body` once the back-off of `uid` has passed, one check at a time (each costs
    /// Argon2id's memory); the delay is checked again inside, for attempts of the same user
    /// that waited together. A caller still in its back-off waits in the slow workers' queue,
    /// holding no thread, and then runs `body` alone again: nothing before it is repeated.
    private func afterBackOff(for uid: UInt32, _ body: @escaping @Sendable () throws -> Outcome) throws -> Outcome {
        let control = context.control
        let wait = try control.lockout.remainingDelayMicros(uid: uid)
        let retry = { (micros: Int) in Outcome.onSlowWorker(notBefore: monotonicSeconds() + Double(micros) / 1e6) {
            try self.afterBackOff(for: uid, body)
        } }
        if wait > 0 { return retry(wait) }
        return try control.oneUnlockAtATime {
            let again = try control.lockout.remainingDelayMicros(uid: uid)
            if again > 0 { return retry(again) }
            return try body()
        }
    }

    /// - Parameters:
    ///   - backOffUID: whose back-off the attempt waits for and counts in: the caller's, or
    ///     the asker's a trusted relay named.
    ///   - done: runs once the attempt is over (wipes a passphrase the program gave).
    private func unlock(_ passphrase: SecureBytes, backOffUID uid: UInt32, done: @escaping @Sendable () -> Void = {}) throws -> Outcome {
        let control = context.control
        return try afterBackOff(for: uid) {
            defer { done() }
            try checkPassphrase(passphrase, uid: uid, control: control)
            return .reply(StatusReply())
        }
    }

    private func checkPassphrase(_ passphrase: SecureBytes, uid: UInt32, control: any VaultControl) throws {
        do {  // a scope, for the comments' sake
            // Counted as a failure before the check: an attempt that cannot be recorded is not checked.
            do {
                try control.lockout.recordAttempt(uid: uid)
            } catch {
                log("unlock refused for \(who(caller)): the back-off record cannot be written (\(error))")
                throw error
            }
            do {
                try vault.unlock(passphrase: passphrase)
            } catch KeychainStatus.authFailed {
                try? control.lockout.markFailed(uid: uid)
                try? audit(.unlockFailed, caller)  // the failure is counted either way
                log("unlock failed for \(who(caller))")
                throw KeychainStatus.authFailed
            }
            do {
                try control.lockout.reset(uid: uid)
            } catch {
                log("the back-off count of \(who(caller)) cannot be cleared (\(error)): it stays")
            }
            control.didUnlock()
            do {
                try audit(.unlock, caller)
            } catch {
                // An unlock the log cannot show does not stand.
                control.lockEverywhere(by: caller, trigger: "unlock-not-logged")
                log("unlock by \(who(caller)) undone: its audit line cannot be written (\(error))")
                throw error
            }
            context.changes.publish(ChangeEvent(kind: .unlock))
            log("unlocked by \(who(caller))")
        }
    }

    func changePassphrase(_ request: PassphraseChange) throws -> Outcome {
        let kdf = request.kdfParameters
        let control = context.control
        // The old passphrase is a guess like any unlock: the same back-off applies, and the
        // attempt is recorded before it is checked.
        return try afterBackOff(for: caller.uid) {
            try control.lockout.recordAttempt(uid: caller.uid)
            let removed: Int
            do {
                removed = try auditedChange(.passphraseChanged, caller) {
                    try vault.changePassphrase(from: request.old, to: request.new, kdf: kdf)
                }
                try? control.lockout.reset(uid: caller.uid)  // if this fails, the count stays: later attempts wait longer
            } catch KeychainStatus.authFailed {
                try? control.lockout.markFailed(uid: caller.uid)
                throw KeychainStatus.authFailed
            }
            log("passphrase changed by \(who(caller))")
            return .reply(PassphraseChanged(deleted: Int64(removed)))
        }
    }

    /// Every numeric setting is bounded (`SettingLimits`, the CLI's ranges too), which decoding
    /// the request checked: nothing is stored unless all are valid.
    func setSettings(_ change: SettingsChange) throws -> Outcome {
        let timeout = change.lockTimeout.map { Int($0) }
        let approvalTimeout = change.approvalTimeout, remember = change.approvalRemember, auditMaxSize = change.auditMaxSize
        let program = change.approvalProgram
        if let t = timeout {
            try vault.setSetting("lock-timeout", Array(String(t).utf8))
            context.control.setIdleTimeout(t)
        }
        if let program { try vault.setSetting("approval-program", Array(program.utf8)) }
        if let n = approvalTimeout { try vault.setSetting("approval-timeout", Array(String(n).utf8)) }
        if let n = remember { try vault.setSetting("approval-remember", Array(String(n).utf8)) }
        if let p = change.pinentry { try vault.setSetting("pinentry", Array(p.utf8)) }
        if let n = auditMaxSize {
            try vault.setSetting("audit-max-size", Array(String(n).utf8))
            context.control.auditLog?.setMaxSize(n)
        }
        return .reply(StatusReply())
    }

    func verify() throws -> Outcome {
        let report = try vault.verify()
        var reply = VerifyReport(checked: Int64(report.checked), locked: Int64(report.locked),
                                 otherDevice: Int64(report.otherDevice), damaged: report.damaged)
        if let log = context.control.auditLog {
            let (lines, _, bad) = log.verify()
            reply.auditLines = Int64(lines)
            reply.auditBreak = bad.map { AuditBreakPoint(file: $0.file, line: Int64($0.line)) }
        }
        try? audit(.verify, caller, report.damaged.isEmpty ? "ok" : "\(report.damaged.count) damaged")
        return .reply(reply)
    }

    func info() throws -> Outcome {
        let pid = Int64(getpid())
        // Callers with no group learn only that a daemon runs and whether it is locked.
        guard groups.holds(.entitled) else {
            return .reply(VaultStatus(state: vault.lockState.rawValue, pid: pid, groups: []))
        }
        // Counts of the caller's own groups unless it administers the vault: the whole vault's
        // would tell it how many secrets others keep (and when they add one).
        let i = try vault.info(accessGroups: groups.isAdministrator ? nil : groups.entitled)
        let control = context.control
        let (timeout, idle) = control.idleTimeout()
        var out = VaultStatus(state: i.lockState.rawValue, pid: pid, groups: groups.entitled)
        out.path = control.vaultPath
        out.hasPassphrase = i.hasPassphrase
        out.format = Int64(i.formatVersion)
        out.kdfOps = Int64(i.kdf.opsLimit)
        out.kdfMem = Int64(i.kdf.memLimit)
        if i.countsKnown {
            out.items = Int64(i.itemCount)
            out.itemsScope = groups.isAdministrator ? "vault" : "groups"
            out.otherDevice = Int64(i.itemsBoundToOtherDevice)
            for p in ProtectionClass.allCases { out.itemsByProtection[p.rawValue] = Int64(i.itemsByProtection[p] ?? 0) }
        }
        out.lockTimeout = Int64(timeout)
        // Which program asks for the passphrase: a path, no secret; entitled callers ask with it.
        if let p = (try? vault.setting("pinentry")).flatMap({ $0 }), !p.isEmpty { out.pinentry = String(decoding: p, as: UTF8.self) }
        if timeout > 0 && i.lockState == .unlocked { out.locksIn = Int64(max(0, Double(timeout) - idle)) }
        if groups.isAdministrator {
            out.mounts = control.currentMounts().map { "\($0.mountpoint) (\($0.options.description))" }
            if let (line, chain) = control.auditLog?.headLine() {
                out.auditLines = line
                out.auditHead = chain
            }
        }
        return .reply(out)
    }
}
