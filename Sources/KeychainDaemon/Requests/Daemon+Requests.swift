import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainFS
import KeychainProtocol

/// The one entry point for requests: the operation's row (`OperationTable`) gives its right,
/// checked here before the request is typed, and its handler; every error becomes a status
/// here and nowhere else, also in the part of a request that continues on a slow worker.
extension Daemon: RequestHandling {
    func row(for request: Request) -> OperationRow? { OperationTable.row(for: request) }

    func respond(to request: Request, row: OperationRow, from caller: CallerIdentity) -> Outcome {
        let context = context(for: caller)
        defer { noteActivity(of: request.operation, by: context.groups) }
        return guarded(request, caller) {
            guard context.groups.holds(row.right) else { throw KeychainStatus.authFailed }
            return try row.run(context, request)
        }
    }

    /// Runs a handler's step, its errors mapped to statuses, and so every step it hands on.
    private func guarded(_ request: Request, _ caller: CallerIdentity, _ step: () throws -> Outcome) -> Outcome {
        do {
            switch try step() {
            case .reply(let r): return .reply(r)
            case .onSlowWorker(let notBefore, let next):
                return .onSlowWorker(notBefore: notBefore) { [self] in guarded(request, caller, next) }
            }
        } catch {
            return .reply(Reply(response: Response(status: status(for: error, of: request, from: caller))))
        }
    }

    /// Only requests from entitled callers keep the vault awake; anyone else's would let them
    /// hold off the idle lock.
    private func noteActivity(of operation: Operation, by groups: GroupSnapshot) {
        guard operation != .ping && operation != .info, !groups.entitled.isEmpty else { return }
        state.withLock { $0.lastActivity = monotonicSeconds() }
    }

    /// The status a failed request answers with. Denials and damage are logged and audited,
    /// a `lookup` as the `copyMatching` it stands for.
    private func status(for error: any Error, of request: Request, from caller: CallerIdentity) -> KeychainStatus {
        let operation = request.operation == .lookup ? .copyMatching : request.operation
        let status: KeychainStatus
        if let known = Self.knownStatus(of: error) {
            status = known
        } else {
            log("\(operation) by \(who(caller)) failed: \(type(of: error))")
            status = .io
        }
        let guess = operation == .unlock || operation == .changePassphrase
        if status == .missingEntitlement || (status == .authFailed && !guess) {
            log("denied \(operation) \(who(caller))")
            try? audit(.denied, caller, "\(operation)")  // denied either way
        }
        if status == .decode { try? audit(.damaged, caller, "\(operation)") }
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
