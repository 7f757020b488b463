import KeychainfsAccess
import KeychainCore
import KeychainProtocol
import KeychainSync

/// `keychainfs sync init|join|approve|remove|status|leave`: the circle verbs, for administrators.
/// Options: `verb`, and `server` (a libpq connection string without a password), `name`, `code`,
/// `host` (the member to remove).
struct SyncRequests: RequestFamily {
    let daemon: Daemon

    func respond(_ request: Request, caller: CallerIdentity) throws -> Response {
        let engine = daemon.sync.engine
        let verb = request.options[.verb]?.stringValue ?? ""
        let server = request.options[.server]?.stringValue ?? ""
        let name = request.options[.name]?.stringValue ?? ""
        do {
            switch verb {
            case "init":
                guard !server.isEmpty else { throw KeychainStatus.param }
                let info = try auditedChange(.syncInit, caller) { try engine.initCircle(conninfo: server, name: name) }
                daemon.sync.kick()
                return Response(info: info)
            case "join":
                guard !server.isEmpty else { throw KeychainStatus.param }
                let code = try auditedChange(.syncJoin, caller) { try engine.join(conninfo: server, name: name) }
                daemon.sync.kick()
                return Response(info: ["code": .string(code)])
            case "approve":
                let code = request.options[.code]?.stringValue ?? ""
                let joined = try auditedChange(.syncApprove, caller) { try engine.approve(code: code) }
                return Response(info: ["name": .string(joined)])
            case "remove":
                let host = request.options[.host]?.stringValue ?? ""
                guard !host.isEmpty else { throw KeychainStatus.param }
                let removed = try auditedChange(.syncRemove, caller) { try engine.remove(host: host) }
                daemon.sync.kick()
                return Response(info: ["name": .string(removed)])
            case "leave":
                try auditedChange(.syncLeave, caller) { try engine.leave() }
                return Response()
            case "status":
                return Response(info: engine.status())
            case "history":
                return try history(request, caller: caller)
            default:
                throw KeychainStatus.param
            }
        } catch let e as SyncError {
            log("sync \(verb) by \(who(caller)): \(e)")
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
    /// attributes, `history-at` (a date), `history-reason` and, with `secrets`, its secret.
    /// Options: `service`, `account` (each optional), `secrets`.
    func history(_ request: Request, caller: CallerIdentity) throws -> Response {
        let service = request.options[.service]?.stringValue.map { Array($0.utf8) }
        let account = request.options[.account]?.stringValue.map { Array($0.utf8) }
        let secrets = request.options[.secrets] == .bool(true)
        let entries = try daemon.vault.history(service: service, account: account, secrets: secrets)
        try? daemon.audit(.syncHistory, caller, "versions=\(entries.count) secrets=\(secrets ? 1 : 0)")
        return Response(result: .array(entries.map { e in
            var attributes = e.attributes
            attributes[.class] = .string(e.itemClass.rawValue)
            attributes[.historyAt] = .date(AbsoluteTime.absolute(unix: e.at))
            attributes[.historyReason] = .string(e.reason.name)
            return .item(FoundItem(attributes: attributes, secret: e.secret, persistentRef: nil))
        }))
    }
}

extension Daemon {
    /// Tells mounts and watchers about an item another host changed, and audits it.
    func syncApplied(_ kind: ChangeKind, _ change: SyncApplied) {
        try? audit(kind == .delete ? .syncDelete : .syncUpdate, nil, "groups=\(change.groups.count)")
        if change.names.count <= 2, let first = change.names.first {
            itemsChanged(ChangeEvent(kind: kind, service: first.service, account: first.account,
                                     previous: change.names.dropFirst().first, groups: change.groups))
        } else {
            itemsChanged(ChangeEvent(kind: kind, groups: change.groups))
        }
    }
}
