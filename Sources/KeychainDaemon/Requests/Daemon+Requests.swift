import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainFS
import KeychainProtocol

/// The one entry point for requests: the operation's right is checked here, the request goes
/// to its family's handler, and every error becomes a status here and nowhere else.
extension Daemon: RequestHandling {
    func rule(for operation: Operation) -> OperationRule { OperationRule.of(operation) }

    func respond(to request: Request, from caller: CallerIdentity, onSlowWorker: Bool) throws -> Reply {
        defer { noteActivity(of: request.operation, by: caller) }
        do {
            try authorize(OperationRule.of(request.operation).right, caller)
            // Typed after the right is checked: a caller without it learns nothing of its options.
            switch try DaemonRequest(decoding: request) {
            case .useKey(let use):
                return Reply(response: try KeyRequests(daemon: self).respond(use, caller: caller, onSlowWorker: onSlowWorker))
            case .sync(let sync):
                return Reply(response: try SyncRequests(daemon: self).respond(sync, caller: caller))
            case .unlock(let unlock):
                return Reply(response: try AdministrationRequests(daemon: self).unlock(unlock, caller: caller))
            case .changePassphrase(let change):
                return Reply(response: try AdministrationRequests(daemon: self).changePassphrase(change, caller: caller))
            case .setSettings(let change):
                return Reply(response: try AdministrationRequests(daemon: self).setSettings(change))
            case .audit(let audit):
                return Reply(response: try AuditRequests(daemon: self).respond(audit, caller: caller))
            case .mount(let mount):
                return Reply(response: try MountRequests(daemon: self).respond(mount, descriptor: request.descriptor, caller: caller))
            case .export(let export):
                return Reply(response: try exportBackup(export, caller: caller, log: log))
            case .import(let backup):
                return Reply(response: try AdministrationRequests(daemon: self).importBackup(backup, caller: caller))
            case .watch:
                // The filter is read again when the connection becomes a watcher (`adoptWatcher`).
                return try AdministrationRequests(daemon: self).watch(caller: caller)
            case .untyped(let request):
                switch request.operation {
                case .add, .copyMatching, .update, .delete:
                    return Reply(response: try ItemRequests(daemon: self).respond(request, caller: caller, onSlowWorker: onSlowWorker))
                case .groupAdd, .groupSet, .groupRemove, .groupList:
                    return Reply(response: try GroupRequests(daemon: self).respond(request, caller: caller))
                case .ping, .info, .lock, .stop, .verify:
                    return try AdministrationRequests(daemon: self).respond(request, caller: caller)
                case .useKey, .sync, .unlock, .changePassphrase, .setSettings, .audit, .mount, .unmount, .watch,
                     .export, .import:
                    throw KeychainStatus.badReq  // typed above
                }
            }
        } catch let deferral as Deferral {
            throw deferral
        } catch {
            return Reply(response: Response(status: status(for: error, of: request, from: caller)))
        }
    }

    private func authorize(_ right: Right, _ caller: CallerIdentity) throws {
        switch right {
        case .anyone: return
        case .entitled: guard isAdministrator(caller) || !entitledGroups(caller).isEmpty else { throw KeychainStatus.authFailed }
        case .administrator: guard isAdministrator(caller) else { throw KeychainStatus.authFailed }
        case .locker:
            guard isAdministrator(caller) || state.withLock({ $0.groupTable.grantsLock(to: caller) }) else {
                throw KeychainStatus.authFailed
            }
        case .auditor:
            guard isAdministrator(caller) || state.withLock({ $0.groupTable.grantsAudit(to: caller) }) else {
                throw KeychainStatus.authFailed
            }
        }
    }

    /// Only requests from entitled callers keep the vault awake; anyone else's would let them
    /// hold off the idle lock.
    private func noteActivity(of operation: Operation, by caller: CallerIdentity) {
        guard operation != .ping && operation != .info, !entitledGroups(caller).isEmpty else { return }
        state.withLock { $0.lastActivity = monotonicSeconds() }
    }

    /// The status a failed request answers with. Denials and damage are logged and audited.
    private func status(for error: any Error, of request: Request, from caller: CallerIdentity) -> KeychainStatus {
        let status: KeychainStatus
        if let known = Self.knownStatus(of: error) {
            status = known
        } else {
            log("\(request.operation) by \(who(caller)) failed: \(type(of: error))")
            status = .io
        }
        let guess = request.operation == .unlock || request.operation == .changePassphrase
        if status == .missingEntitlement || (status == .authFailed && !guess) {
            log("denied \(request.operation) \(who(caller))")
            try? audit(.denied, caller, "\(request.operation)")  // denied either way
        }
        if status == .decode { try? audit(.damaged, caller, "\(request.operation)") }
        return status
    }

    /// A caller as the daemon's log names it.
    func who(_ caller: CallerIdentity) -> String {
        "uid=\(caller.uid) pid=\(caller.pid) exe=\(printable(caller.executable ?? "?"))"
    }

    /// From now on the hub owns the descriptor: it notices the client closing and closes it.
    func adoptWatcher(fd: Int32, caller: CallerIdentity, request: Request) {
        let filter = (try? WatchRequest(decoding: request)) ?? WatchRequest()  // decoded before its reply
        events.adopt(fd: fd, caller: caller, administrator: isAdministrator(caller), service: filter.service, account: filter.account)
    }

    func stopAfterReply(_ caller: CallerIdentity) -> Never {
        log("stopped by uid \(caller.uid)")
        shutdown()
    }
}
