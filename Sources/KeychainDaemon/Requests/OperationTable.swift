import KeychainProtocol

/// Every operation the daemon serves, one name each. The audit log's check and rotation are
/// operations of their own (they need another right than reading it), though they share the
/// wire's `audit` code.
enum DaemonOperation: String, CaseIterable, Sendable {
    case ping, info, unlock, lock, stop, verify, changePassphrase, setSettings, watch
    case add, copyMatching, lookup, update, delete, useKey
    case groupAdd, groupSet, groupRemove, groupList
    case mount, unmount
    case auditRead, auditVerify, auditRotate
    case export, `import`, sync, serviceTimes, checkSignature

    /// The operation a request asks for: its code, and for `audit` its `verify` or `rotate` flag.
    /// Nil for a flag of another type (errSecParam).
    init?(of request: Request) {
        switch request.operation {
        case .ping: self = .ping
        case .unlock: self = .unlock
        case .lock: self = .lock
        case .info: self = .info
        case .add: self = .add
        case .copyMatching: self = .copyMatching
        case .lookup: self = .lookup
        case .update: self = .update
        case .delete: self = .delete
        case .changePassphrase: self = .changePassphrase
        case .setSettings: self = .setSettings
        case .groupAdd: self = .groupAdd
        case .groupSet: self = .groupSet
        case .groupList: self = .groupList
        case .groupRemove: self = .groupRemove
        case .stop: self = .stop
        case .mount: self = .mount
        case .unmount: self = .unmount
        case .export: self = .export
        case .import: self = .import
        case .watch: self = .watch
        case .verify: self = .verify
        case .useKey: self = .useKey
        case .sync: self = .sync
        case .serviceTimes: self = .serviceTimes
        case .checkSignature: self = .checkSignature
        case .audit:
            guard let verify = try? request.options.flag(.verify), let rotate = try? request.options.flag(.rotate) else { return nil }
            self = verify ? .auditVerify : rotate ? .auditRotate : .auditRead
        }
    }
}

/// Where a request runs. Decided from the request before its handler starts; a handler that
/// finds it must wait (a presence approval) hands the rest of its work to a slow worker as an
/// `Outcome`, and nothing done so far runs again.
enum Lane: Sendable {
    /// On the event thread that read it.
    case event
    /// On a slow worker: it waits for a passphrase check, a program, a mount or a scan.
    case slow
    /// On a slow worker when the predicate holds (an add of a key the daemon makes).
    case slowWhen(@Sendable (Request) -> Bool)
}

/// What a handler answers: its reply, or the rest of its work for a slow worker, to run once
/// `notBefore` (monotonic seconds) has passed, without a thread while it waits.
enum Outcome: Sendable {
    case reply(Reply)
    case onSlowWorker(notBefore: Double, then: @Sendable () throws -> Outcome)

    static func reply(_ typed: some TypedReply, after: Reply.After = .nothing) -> Outcome {
        .reply(Reply(response: typed.response, after: after))
    }

    /// The rest on a slow worker, at once.
    static func slow(_ then: @escaping @Sendable () throws -> Outcome) -> Outcome { .onSlowWorker(notBefore: 0, then: then) }
}

/// One operation: who may ask for it, how many secrets it carries, where it runs and what
/// answers it. The request is typed after the right is checked, so a caller without it
/// learns nothing of its options.
struct OperationRow: Sendable {
    let operation: DaemonOperation
    let right: Right
    /// How many secrets the request may carry; more is errSecParam before anything else runs.
    let secrets: ClosedRange<Int>
    let lane: Lane
    let run: @Sendable (RequestContext, Request) throws -> Outcome

    init<R: TypedRequest & SendableMetatype>(_ operation: DaemonOperation, _ right: Right, secrets: ClosedRange<Int> = 0...0, lane: Lane = .event,
                          _ type: R.Type, _ handle: @escaping @Sendable (RequestContext, R) throws -> Outcome) {
        self.operation = operation
        self.right = right
        self.secrets = secrets
        self.lane = lane
        run = { context, request in try handle(context, try R(decoding: request)) }
    }

    func runsOnSlowWorker(_ request: Request) -> Bool {
        switch lane {
        case .event: return false
        case .slow: return true
        case .slowWhen(let picks): return picks(request)
        }
    }
}

/// The daemon's operations, a row each (after go-fuse's opcode table). Adding an operation is
/// a wire code, a request and a reply type in KeychainProtocol, a row here and its handler.
enum OperationTable {
    static let rows: [OperationRow] = [
        // Anyone: the handler decides by the caller's groups (an outsider sees nothing).
        OperationRow(.ping, .anyone, BareRequest.self) { _, _ in AdministrationRequests.ping() },
        OperationRow(.info, .anyone, BareRequest.self) { c, _ in try AdministrationRequests(context: c).info() },
        OperationRow(.groupList, .anyone, GroupRequest.self) { c, _ in GroupRequests(context: c).list() },
        OperationRow(.add, .anyone, secrets: 0...1, lane: .slowWhen(ItemRequests.makesKey), ItemAdd.self) { c, r in
            try ItemRequests(context: c).add(r)
        },
        OperationRow(.copyMatching, .anyone, ItemSearch.self) { c, r in try ItemRequests(context: c).search(r) },
        OperationRow(.lookup, .anyone, ItemLookup.self) { c, r in try ItemRequests(context: c).lookUp(r) },
        OperationRow(.update, .anyone, secrets: 0...1, ItemUpdate.self) { c, r in try ItemRequests(context: c).update(r) },
        OperationRow(.delete, .anyone, ItemDelete.self) { c, r in try ItemRequests(context: c).delete(r) },
        OperationRow(.useKey, .anyone, secrets: 1...1, KeyUseRequest.self) { c, r in try KeyRequests(context: c).use(r) },
        OperationRow(.checkSignature, .entitled, SignatureCheck.self) { _, r in try SignatureChecks.check(r) },
        // No secret: the approval program gives the passphrase (`by` approval-program).
        OperationRow(.unlock, .anyone, secrets: 0...1, lane: .slow, UnlockRequest.self) { c, r in
            try AdministrationRequests(context: c).unlock(r)
        },
        OperationRow(.watch, .entitled, WatchRequest.self) { c, _ in try AdministrationRequests(context: c).watch() },
        OperationRow(.lock, .locker, lane: .slow, BareRequest.self) { c, _ in AdministrationRequests(context: c).lock() },
        OperationRow(.auditRead, .auditor, AuditRequest.self) { c, r in try AuditRequests(context: c).read(r) },
        OperationRow(.auditVerify, .administrator, AuditRequest.self) { c, _ in try AuditRequests(context: c).verify() },
        OperationRow(.auditRotate, .administrator, AuditRequest.self) { c, _ in try AuditRequests(context: c).rotate() },
        // The vault's owner and root.
        OperationRow(.changePassphrase, .administrator, secrets: 2...2, lane: .slow, PassphraseChange.self) { c, r in
            try AdministrationRequests(context: c).changePassphrase(r)
        },
        OperationRow(.setSettings, .administrator, SettingsChange.self) { c, r in
            try AdministrationRequests(context: c).setSettings(r)
        },
        OperationRow(.groupAdd, .administrator, GroupChangeRequest.self) { c, r in try GroupRequests(context: c).change(r) },
        OperationRow(.groupSet, .administrator, GroupChangeRequest.self) { c, r in try GroupRequests(context: c).change(r) },
        OperationRow(.groupRemove, .administrator, GroupChangeRequest.self) { c, r in try GroupRequests(context: c).change(r) },
        OperationRow(.stop, .administrator, BareRequest.self) { c, _ in AdministrationRequests(context: c).stop() },
        OperationRow(.mount, .administrator, lane: .slow, MountCall.self) { c, r in try MountRequests(context: c).mount(r) },
        OperationRow(.unmount, .administrator, lane: .slow, MountRequest.self) { c, r in
            try MountRequests(context: c).unmount(r)
        },
        OperationRow(.verify, .administrator, lane: .slow, BareRequest.self) { c, _ in
            try AdministrationRequests(context: c).verify()
        },
        OperationRow(.export, .administrator, secrets: 0...1, lane: .slow, ExportRequest.self) { c, r in
            try BackupRequests(context: c).export(r)
        },
        OperationRow(.import, .administrator, secrets: 0...1, lane: .slow, ImportRequest.self) { c, r in
            try BackupRequests(context: c).import(r)
        },
        OperationRow(.sync, .administrator, lane: .slow, SyncRequest.self) { c, r in try SyncRequests(context: c).respond(r) },
        OperationRow(.serviceTimes, .administrator, ServiceTimesRequest.self) { c, r in
            AdministrationRequests(context: c).serviceTimes(r)
        },
    ]

    private static let byOperation: [DaemonOperation: OperationRow] = Dictionary(rows.map { ($0.operation, $0) }) { first, _ in first }

    /// The row of the operation a request asks for; nil when its sub-operation flag is malformed.
    static func row(for request: Request) -> OperationRow? {
        // The commonest request, a lookup, without the operation's switch and the table's hash.
        if request.operation == .lookup { return lookupRow }
        return DaemonOperation(of: request).flatMap { byOperation[$0] }
    }

    private static let lookupRow = byOperation[.lookup]
}
