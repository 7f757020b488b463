import KeychainfsAccess
import KeychainCore
import KeychainProtocol
import KeychainSync

/// `keychainfs sync init|join|approve|remove|status|set|leave` and `history`: the circle verbs,
/// for administrators. The request is a `SyncRequest` (options `verb`, `server`, `name`, `code`,
/// `host`, `retention-days`, `poll-ms`, `history-id`).
struct SyncRequests: RequestFamily {
    let context: RequestContext

    func respond(_ request: SyncRequest) throws -> Outcome {
        let runner = context.control.syncRunner
        let engine = runner.engine
        do {
            switch request {
            case .initCircle(let server, let name, let poll):
                let info = try auditedChange(.syncInit, caller) {
                    try engine.initCircle(conninfo: server, name: name ?? "", pollMilliseconds: Int(poll ?? 0))
                }
                runner.kick()
                return .reply(SyncReply(status: info))
            case .join(let server, let name, let poll):
                let code = try auditedChange(.syncJoin, caller) {
                    try engine.join(conninfo: server, name: name ?? "", pollMilliseconds: Int(poll ?? 0))
                }
                runner.kick()
                return .reply(SyncReply(code: code))
            case .approve(let code):
                let joined = try auditedChange(.syncApprove, caller) { try engine.approve(code: code) }
                return .reply(SyncReply(name: joined))
            case .remove(let host):
                let removed = try auditedChange(.syncRemove, caller) { try engine.remove(host: host) }
                runner.kick()
                return .reply(SyncReply(name: removed))
            case .leave:
                try auditedChange(.syncLeave, caller) { try engine.leave() }
                return .reply(SyncReply())
            case .status:
                return .reply(SyncReply(status: engine.status()))
            case .history(let service, let account, let secrets):
                return .reply(SyncReply(history: try history(service: service, account: account, secrets: secrets)))
            case .set(let days, let poll):
                if let days {
                    try auditedChange(.syncSet, caller, "retention-days=\(days)") { try engine.setRetention(days: Int(days)) }
                }
                if let poll {
                    try auditedChange(.syncSet, caller, "poll-ms=\(poll)") { try engine.setPoll(milliseconds: Int(poll)) }
                    runner.kick()  // the loop's wait follows the new setting after this round
                }
                return .reply(SyncReply(status: engine.status()))
            case .restore(let id):
                try restore(id: id)
                return .reply(SyncReply())
            }
        } catch let e as SyncError {
            log("sync \(request.verb) by \(who(caller)): \(e)")
            switch e {
            case .noSuchJoin, .noSuchMember: throw KeychainStatus.itemNotFound
            case .circleChanged: throw KeychainStatus.notAvailable
            case .notMember: throw KeychainStatus.param
            case .server: throw KeychainStatus.notAvailable
            default: throw KeychainStatus.decode
            }
        }
    }
}

extension SyncRequests {
    /// `keychainfs history`: the versions fleet sync set aside, newest first, each with its
    /// attributes, `history-at` (a date), `history-reason`, `history-id` (what `restore`
    /// takes) and, with `secrets`, its secret.
    /// Of one service and account (each optional).
    func history(service: String?, account: String?, secrets: Bool) throws -> QueryResult {
        let entries = try vault.history(service: service.map { Array($0.utf8) }, account: account.map { Array($0.utf8) },
                                               secrets: secrets)
        try? audit(.syncHistory, caller, "versions=\(entries.count) secrets=\(secrets ? 1 : 0)")
        return .array(entries.map { e in
            var attributes = e.attributes
            attributes[.class] = .string(e.itemClass.rawValue)
            attributes[.historyAt] = .date(AbsoluteTime.absolute(unix: e.at))
            attributes[.historyReason] = .string(e.reason.name)
            attributes[.historyID] = .number(e.id)
            return .item(FoundItem(attributes: attributes, secret: e.secret, persistentRef: nil))
        })
    }
}

extension SyncRequests {
    /// `keychainfs history --restore ID`: the kept version becomes a local change, which the
    /// next round sends; mounts and watchers are told as of any change.
    func restore(id: Int64) throws {
        let restored = try auditedChange(.syncRestore, caller, "id=\(id)") { try vault.restoreFromHistory(id: id) }
        itemsChanged(ChangeEvent.synced(restored.added ? .add : .update, restored.applied))
    }
}

extension Daemon {
    /// Tells mounts and watchers about an item another host changed, and audits it.
    func syncApplied(_ kind: ChangeKind, _ change: SyncApplied) {
        try? audit(kind == .delete ? .syncDelete : .syncUpdate, nil, "groups=\(change.groups.count)")
        itemsChanged(ChangeEvent.synced(kind, change), mountsTold: false, fromSync: true)
    }
}

extension ChangeEvent {
    /// The event of a change fleet sync made: its names when it touched one or two.
    static func synced(_ kind: ChangeKind, _ change: SyncApplied) -> ChangeEvent {
        guard change.names.count <= 2, let first = change.names.first else { return ChangeEvent(kind: kind, groups: change.groups) }
        return ChangeEvent(kind: kind, service: first.service, account: first.account,
                           previous: change.names.dropFirst().first, groups: change.groups)
    }
}
