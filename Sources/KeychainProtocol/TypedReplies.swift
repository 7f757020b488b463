import KeychainModel
import KeychainCrypto

/// A reply of one operation with its info typed: the daemon builds one and sends `response`;
/// a client reads one with `init(decoding:)`. The info record's names are written and read
/// here and nowhere else, so the bytes on the wire are those the string-keyed info always gave.
public protocol TypedReply {
    init(decoding response: Response) throws
    var response: Response { get }
}

// MARK: Reading info

/// Named reads of a reply's info record; a value of another type reads as absent, as a reply
/// from an older daemon without the field would.
struct InfoReader {
    let fields: Fields

    func string(_ name: String) -> String? { fields[name]?.stringValue }

    func number(_ name: String) -> Int64? {
        if case .number(let n)? = fields[name] { return n }
        return nil
    }

    func flag(_ name: String) -> Bool {
        switch fields[name] {
        case .bool(let b)?: return b
        case .number(let n)?: return n != 0
        default: return false
        }
    }

    func data(_ name: String) -> [UInt8]? {
        if case .data(let d)? = fields[name] { return d }
        return nil
    }

    /// A list sent as one string, entries separated by `separator`; empty when absent.
    func list(_ name: String, separator: Character = "\n") -> [String] {
        (string(name) ?? "").split(separator: separator).map(String.init)
    }
}

// MARK: No info

/// The reply of an operation that answers with its status alone (lock, unlock, stop, the
/// settings, group changes, mount and unmount, update and delete, sync leave).
public struct StatusReply: TypedReply {
    public init() {}
    public init(decoding response: Response) throws {}
    public var response: Response { Response() }
}

/// The reply of a search, an add, a group list or sync history: the shaped values.
public struct ItemsReply: TypedReply {
    public var result: QueryResult

    public init(_ result: QueryResult) { self.result = result }
    public init(decoding response: Response) throws { result = response.result }
    public var response: Response { Response(result: result) }
}

/// `useKey`: the signature, plaintext or shared secret, in guarded memory.
public struct KeyUseReply: TypedReply {
    public var output: SecureBytes

    public init(output: SecureBytes) { self.output = output }

    /// - Throws: errSecDecode when the reply holds no data value.
    public init(decoding response: Response) throws {
        guard case .value(.data(let d)) = response.result else { throw KeychainStatus.decode }
        output = d
    }

    public var response: Response { Response(result: .value(.data(output))) }
}

// MARK: ping, info, verify

/// `ping`: the daemon's protocol version and process.
public struct PingReply: TypedReply {
    public var protocolVersion: Int64
    public var pid: Int64

    public init(protocolVersion: Int64 = Int64(WireProtocol.version), pid: Int64) {
        self.protocolVersion = protocolVersion
        self.pid = pid
    }

    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        protocolVersion = r.number("protocol") ?? 0
        pid = r.number("pid") ?? 0
    }

    public var response: Response { Response(info: ["protocol": .number(protocolVersion), "pid": .number(pid)]) }
}

/// `info`: the vault's state as the caller may see it. A caller entitled to no group learns
/// only the state and the daemon's pid; mounts and the audit head are the administrators'.
public struct VaultStatus: TypedReply {
    /// `unlocked`, `locked` or `never-unlocked`.
    public var state: String
    public var pid: Int64
    /// The caller's entitled groups, in order.
    public var groups: [String]
    public var path: String?
    public var hasPassphrase: Bool?
    public var format: Int64?
    public var kdfOps: Int64?
    public var kdfMem: Int64?
    public var items: Int64?
    /// What the counts cover: `vault` (an administrator's: every item) or `groups` (the
    /// caller's entitled access groups only).
    public var itemsScope: String?
    /// Items of each protection class, by its raw name (`ak`, `cku`, ...).
    public var itemsByProtection: [String: Int64] = [:]
    public var otherDevice: Int64?
    public var lockTimeout: Int64?
    /// The pinentry program unlock prompts run (`set-keychain-settings --pinentry`), when set.
    public var pinentry: String?
    /// Seconds until the idle lock, when one is due.
    public var locksIn: Int64?
    /// Each current mount as "POINT (OPTIONS)"; nil for a caller who is not an administrator.
    public var mounts: [String]?
    public var auditLines: Int64?
    public var auditHead: String?

    public static let unlocked = "unlocked"

    public init(state: String, pid: Int64, groups: [String]) {
        self.state = state
        self.pid = pid
        self.groups = groups
    }

    public var isUnlocked: Bool { state == Self.unlocked }
    /// Locked, or opened and never unlocked: what errSecInteractionNotAllowed usually means.
    public var isLocked: Bool { state == "locked" || state == "never-unlocked" }

    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        state = r.string("state") ?? "?"
        pid = r.number("pid") ?? 0
        groups = r.list("groups", separator: ",")
        path = r.string("path")
        if case .bool(let b)? = response.info["passphrase"] { hasPassphrase = b }
        format = r.number("format")
        kdfOps = r.number("kdf-ops")
        kdfMem = r.number("kdf-mem")
        items = r.number("items")
        itemsScope = r.string("items-scope")
        for (name, value) in response.info where name.hasPrefix(Self.countPrefix) {
            if case .number(let n) = value { itemsByProtection[String(name.dropFirst(Self.countPrefix.count))] = n }
        }
        otherDevice = r.number("other-device")
        lockTimeout = r.number("lock-timeout")
        pinentry = r.string("pinentry")
        locksIn = r.number("locks-in")
        mounts = r.string("mounts").map { $0.split(separator: "\n").map(String.init) }
        auditLines = r.number("audit-lines")
        auditHead = r.string("audit-head")
    }

    private static let countPrefix = "count."

    /// The record as sent: what `--json` prints.
    public var fields: Fields {
        var out: Fields = ["state": .string(state), "pid": .number(pid), "groups": .string(groups.joined(separator: ","))]
        if let path { out["path"] = .string(path) }
        if let hasPassphrase { out["passphrase"] = .bool(hasPassphrase) }
        if let format { out["format"] = .number(format) }
        if let kdfOps { out["kdf-ops"] = .number(kdfOps) }
        if let kdfMem { out["kdf-mem"] = .number(kdfMem) }
        if let items { out["items"] = .number(items) }
        if let itemsScope { out["items-scope"] = .string(itemsScope) }
        for (p, n) in itemsByProtection { out[Self.countPrefix + p] = .number(n) }
        if let otherDevice { out["other-device"] = .number(otherDevice) }
        if let lockTimeout { out["lock-timeout"] = .number(lockTimeout) }
        if let pinentry { out["pinentry"] = .string(pinentry) }
        if let locksIn { out["locks-in"] = .number(locksIn) }
        if let mounts { out["mounts"] = .string(mounts.joined(separator: "\n")) }
        if let auditLines { out["audit-lines"] = .number(auditLines) }
        if let auditHead { out["audit-head"] = .string(auditHead) }
        return out
    }

    public var response: Response { Response(info: fields) }
}

/// Where an audit chain first fails: the file and its line.
public struct AuditBreakPoint: Equatable, Sendable {
    public var file: String
    public var line: Int64
    public init(file: String, line: Int64) {
        self.file = file
        self.line = line
    }
}

/// `verify`: every item checked, and the audit chain.
public struct VerifyReport: TypedReply {
    public var checked: Int64
    public var locked: Int64
    public var otherDevice: Int64
    /// One line per damaged item.
    public var damaged: [String]
    public var auditLines: Int64?
    public var auditBreak: AuditBreakPoint?

    public init(checked: Int64, locked: Int64, otherDevice: Int64, damaged: [String], auditLines: Int64? = nil,
                auditBreak: AuditBreakPoint? = nil) {
        self.checked = checked
        self.locked = locked
        self.otherDevice = otherDevice
        self.damaged = damaged
        self.auditLines = auditLines
        self.auditBreak = auditBreak
    }

    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        checked = r.number("checked") ?? 0
        locked = r.number("locked") ?? 0
        otherDevice = r.number("other-device") ?? 0
        damaged = r.list("damaged")
        auditLines = r.number("audit-lines")
        auditBreak = r.number("audit-first-bad").map { AuditBreakPoint(file: r.string("audit-first-bad-file") ?? "", line: $0) }
    }

    public var fields: Fields {
        var out: Fields = ["checked": .number(checked), "locked": .number(locked), "other-device": .number(otherDevice),
                           "damaged": .string(damaged.joined(separator: "\n"))]
        if let auditLines { out["audit-lines"] = .number(auditLines) }
        if let auditBreak {
            out["audit-first-bad"] = .number(auditBreak.line)
            out["audit-first-bad-file"] = .string(auditBreak.file)
        }
        return out
    }

    public var response: Response { Response(info: fields) }
}

// MARK: changePassphrase, watch

/// `changePassphrase`: how many items went with the old passphrase (WhenPasscodeSet items
/// when it is removed).
public struct PassphraseChanged: TypedReply {
    public var deleted: Int64
    public init(deleted: Int64) { self.deleted = deleted }
    public init(decoding response: Response) throws { deleted = InfoReader(fields: response.info).number("deleted") ?? 0 }
    public var response: Response { Response(info: ["deleted": .number(deleted)]) }
}

/// `watch`: the first reply, before the events: whether this watcher sees names.
public struct WatchStarted: TypedReply {
    public var names: Bool
    public init(names: Bool) { self.names = names }
    public init(decoding response: Response) throws { names = InfoReader(fields: response.info).flag("names") }
    public var response: Response { Response(info: ["names": .bool(names)]) }
}

/// One event a watcher receives: a change's kind (`add`, `update`, `delete`, `lock`, `unlock`,
/// `groups`, or `overflow`, the last frame of a watcher that fell behind), its time in epoch
/// seconds, and for administrators the item's names.
public struct WatchEvent: TypedReply {
    public var kind: String
    public var time: Int64
    public var service: String?
    public var account: String?

    /// The last event of a stream that fell too far behind.
    public static let overflow = "overflow"

    public init(kind: String, time: Int64, service: String? = nil, account: String? = nil) {
        self.kind = kind
        self.time = time
        self.service = service
        self.account = account
    }

    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        kind = r.string("event") ?? "?"
        time = r.number("time") ?? 0
        service = r.string("service")
        account = r.string("account")
    }

    public var fields: Fields {
        var out: Fields = ["event": .string(kind), "time": .number(time)]
        if let service { out["service"] = .string(service) }
        if let account { out["account"] = .string(account) }
        return out
    }

    public var response: Response { Response(info: fields) }
}

// MARK: audit

/// `audit` read: the raw lines that match, oldest first, and the names of the items they
/// reference that the caller may see (one `REF SERVICE/ACCOUNT`-style entry per line).
public struct AuditLines: TypedReply {
    public var log: String
    public var names: String
    /// How many older matching lines did not fit the reply.
    public var omitted: Int64?

    public init(log: String, names: String, omitted: Int64?) {
        self.log = log
        self.names = names
        self.omitted = omitted
    }

    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        log = r.string("log") ?? ""
        names = r.string("names") ?? ""
        omitted = r.number("omitted")
    }

    public var response: Response {
        var out: Fields = ["log": .string(log), "names": .string(names)]
        if let omitted { out["omitted"] = .number(omitted) }
        return Response(info: out)
    }
}

/// `audit --verify`: the chain's lines and files, and where it first fails.
public struct AuditChain: TypedReply {
    public var lines: Int64
    public var files: Int64
    public var firstBreak: AuditBreakPoint?

    public init(lines: Int64, files: Int64, firstBreak: AuditBreakPoint?) {
        self.lines = lines
        self.files = files
        self.firstBreak = firstBreak
    }

    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        lines = r.number("lines") ?? 0
        files = r.number("files") ?? 1
        firstBreak = r.number("first-bad").map { AuditBreakPoint(file: r.string("first-bad-file") ?? "", line: $0) }
    }

    public var response: Response {
        var out: Fields = ["lines": .number(lines), "files": .number(files)]
        if let firstBreak {
            out["first-bad"] = .number(firstBreak.line)
            out["first-bad-file"] = .string(firstBreak.file)
        }
        return Response(info: out)
    }
}

/// `audit rotate`: the file the log was moved to.
public struct AuditRotation: TypedReply {
    public var rotated: String
    public init(rotated: String) { self.rotated = rotated }
    public init(decoding response: Response) throws { rotated = InfoReader(fields: response.info).string("rotated") ?? "" }
    public var response: Response { Response(info: ["rotated": .string(rotated)]) }
}

// MARK: export, import

/// `export`: a piece of the backup. The first also gives the whole size, the item counts and,
/// when more pieces follow, the transfer number to ask for them with.
public struct ExportPiece: TypedReply {
    public var data: [UInt8]
    public var size: Int64?
    public var items: Int64?
    public var damaged: Int64?
    public var transfer: Int64?

    public init(data: [UInt8], size: Int64? = nil, items: Int64? = nil, damaged: Int64? = nil, transfer: Int64? = nil) {
        self.data = data
        self.size = size
        self.items = items
        self.damaged = damaged
        self.transfer = transfer
    }

    /// - Throws: errSecDecode without the piece's bytes.
    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        guard let d = r.data("data") else { throw KeychainStatus.decode }
        data = d
        size = r.number("size")
        items = r.number("items")
        damaged = r.number("damaged")
        transfer = r.number("transfer")
    }

    public var response: Response {
        var out: Fields = ["data": .data(data)]
        if let size { out["size"] = .number(size) }
        if let items { out["items"] = .number(items) }
        if let damaged { out["damaged"] = .number(damaged) }
        if let transfer { out["transfer"] = .number(transfer) }
        return Response(info: out)
    }
}

/// `import`: the transfer number after a first piece; the counts after the last; after a purge,
/// the items deleted.
public struct ImportProgress: TypedReply {
    public var transfer: Int64?
    public var added: Int64 = 0
    public var replaced: Int64 = 0
    public var skipped: Int64 = 0
    public var groupsCreated: [String] = []
    public var groupsMissing: [String] = []
    public var deleted: Int64?

    public init(transfer: Int64? = nil, added: Int64 = 0, replaced: Int64 = 0, skipped: Int64 = 0,
                groupsCreated: [String] = [], groupsMissing: [String] = [], deleted: Int64? = nil) {
        self.transfer = transfer
        self.added = added
        self.replaced = replaced
        self.skipped = skipped
        self.groupsCreated = groupsCreated
        self.groupsMissing = groupsMissing
        self.deleted = deleted
    }

    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        transfer = r.number("transfer")
        added = r.number("added") ?? 0
        replaced = r.number("replaced") ?? 0
        skipped = r.number("skipped") ?? 0
        groupsCreated = r.list("groups-created")
        groupsMissing = r.list("groups-missing")
        deleted = r.number("deleted")
    }

    public var response: Response {
        if let deleted { return Response(info: ["deleted": .number(deleted)]) }
        if let transfer { return Response(info: ["transfer": .number(transfer)]) }
        return Response(info: ["added": .number(added), "replaced": .number(replaced), "skipped": .number(skipped),
                               "groups-created": .string(groupsCreated.joined(separator: "\n")),
                               "groups-missing": .string(groupsMissing.joined(separator: "\n"))])
    }
}

// MARK: sync

/// `sync`: what a verb answers. `join` gives the code to approve on a member; `approve` and
/// `remove` the member's name; `status` and `init` the circle's state (shown as given).
public struct SyncReply: TypedReply {
    public var code: String?
    public var name: String?
    public var status: Fields
    /// `history`: the versions set aside, as items.
    public var history: QueryResult

    public init(code: String? = nil, name: String? = nil, status: Fields = [:], history: QueryResult = .none) {
        self.code = code
        self.name = name
        self.status = status
        self.history = history
    }

    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        code = r.string("code")
        name = r.string("name")
        status = response.info
        history = response.result
    }

    public var fields: Fields {
        var out = status
        if let code { out["code"] = .string(code) }
        if let name { out["name"] = .string(name) }
        return out
    }

    public var response: Response { Response(result: history, info: fields) }
}

// MARK: serviceTimes

/// How one class of callers' requests fared: how many, and the median and 99th percentile of
/// their wait inside the daemon (from the frame read to the handler's start, a slow worker's
/// queue included) and of their service (the handler's run), in microseconds.
public struct TimingSummary: Equatable, Sendable {
    public var requests: Int64
    public var waitMedian: Int64
    public var waitP99: Int64
    public var serviceMedian: Int64
    public var serviceP99: Int64

    public init(requests: Int64 = 0, waitMedian: Int64 = 0, waitP99: Int64 = 0, serviceMedian: Int64 = 0, serviceP99: Int64 = 0) {
        self.requests = requests
        self.waitMedian = waitMedian
        self.waitP99 = waitP99
        self.serviceMedian = serviceMedian
        self.serviceP99 = serviceP99
    }

    static let names = ["requests", "wait-p50-us", "wait-p99-us", "service-p50-us", "service-p99-us"]

    var values: [Int64] { [requests, waitMedian, waitP99, serviceMedian, serviceP99] }

    init(_ r: InfoReader, prefix: String) {
        let v = Self.names.map { r.number(prefix + $0) ?? 0 }
        self.init(requests: v[0], waitMedian: v[1], waitP99: v[2], serviceMedian: v[3], serviceP99: v[4])
    }
}

/// `serviceTimes`: the owner's and root's requests, and everyone else's.
public struct ServiceTimes: TypedReply {
    public var privileged: TimingSummary
    public var others: TimingSummary

    public init(privileged: TimingSummary, others: TimingSummary) {
        self.privileged = privileged
        self.others = others
    }

    public init(decoding response: Response) throws {
        let r = InfoReader(fields: response.info)
        privileged = TimingSummary(r, prefix: "owner.")
        others = TimingSummary(r, prefix: "others.")
    }

    public var fields: Fields {
        var out: Fields = [:]
        for (prefix, summary) in [("owner.", privileged), ("others.", others)] {
            for (name, value) in zip(TimingSummary.names, summary.values) { out[prefix + name] = .number(value) }
        }
        return out
    }

    public var response: Response { Response(info: fields) }
}
