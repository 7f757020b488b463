import KeychainModel
import KeychainCrypto

/// Requests of one operation with their payload typed, on top of the codec: `init(decoding:)`
/// reads a decoded `Request` and refuses a missing or wrongly typed option with errSecParam
/// (`KeychainStatus.param`); `request` is the `Request` a client sends, whose bytes are those
/// the string-keyed options always gave (options are written sorted by name).
///
/// The daemon reads these after the operation's right is checked (`Daemon.respond`), so a
/// caller without the right learns errSecAuthFailed before anything about its options.
public protocol TypedRequest {
    init(decoding request: Request) throws
    var request: Request { get }
}

// MARK: Typed reads of options

extension Dictionary where Key == OptionKey, Value == AttributeValue {
    /// The string option `key`; nil when absent. - Throws: errSecParam for another type.
    package func string(_ key: OptionKey) throws -> String? {
        switch self[key] {
        case nil: return nil
        case .string(let s)?: return s
        default: throw KeychainStatus.param
        }
    }

    /// The number option `key`; nil when absent. - Throws: errSecParam for another type.
    package func number(_ key: OptionKey) throws -> Int64? {
        switch self[key] {
        case nil: return nil
        case .number(let n)?: return n
        default: throw KeychainStatus.param
        }
    }

    /// The data option `key`; nil when absent. - Throws: errSecParam for another type.
    package func data(_ key: OptionKey) throws -> [UInt8]? {
        switch self[key] {
        case nil: return nil
        case .data(let d)?: return d
        default: throw KeychainStatus.param
        }
    }

    /// The flag option `key`: a bool, or a number (non-zero is true); false when absent.
    /// - Throws: errSecParam for another type.
    package func flag(_ key: OptionKey) throws -> Bool {
        switch self[key] {
        case nil: return false
        case .bool(let b)?: return b
        case .number(let n)?: return n != 0
        default: throw KeychainStatus.param
        }
    }
}

// MARK: useKey

/// What a stored private key is used for (option `use`).
public enum KeyUse: String, Sendable, CaseIterable {
    case sign
    case decrypt
    case keyExchange
}

/// Who a relay (the SSH agent) uses a key for, as the relay saw its own client: written into
/// the use's audit line beside the relay's own identity, and never used to decide anything.
public struct RelayedUse: Equatable, Sendable {
    public var uid: UInt32
    public var pid: Int32
    public var executable: String?
    /// What the use is for, as the relay names it (the SSH host key's fingerprint).
    public var host: String?

    public init(uid: UInt32, pid: Int32, executable: String?, host: String?) {
        self.uid = uid
        self.pid = pid
        self.executable = executable
        self.host = host
    }
}

/// `useKey`: an operation with a stored private key, run by the daemon.
public struct KeyUseRequest: TypedRequest, Sendable {
    /// The key item's persistent reference (query `v_PersistentRef`).
    public var ref: [UInt8]
    /// The query's other keys: how the daemon may ask for presence (`u_AuthUI`, `u_NoAuthUI`).
    public var interaction: Attributes
    public var use: KeyUse
    /// Apple's raw `SecKeyAlgorithm` name.
    public var algorithm: String
    /// A key exchange's other side, Apple's external representation of its public key.
    public var peer: [UInt8]?
    /// A key exchange's shared secret length, for a KDF algorithm.
    public var requestedSize: Int64?
    /// A key exchange's KDF shared info.
    public var sharedInfo: [UInt8]?
    /// The data to sign, the ciphertext; empty for a key exchange.
    public var input: SecureBytes
    /// The relay's client, for the audit line (`for-uid`, `for-pid`, `for-exe`, `for-host`).
    public var relayed: RelayedUse?

    public init(ref: [UInt8], use: KeyUse, algorithm: String, peer: [UInt8]? = nil, requestedSize: Int64? = nil,
                sharedInfo: [UInt8]? = nil, input: SecureBytes, interaction: Attributes = [:], relayed: RelayedUse? = nil) {
        self.ref = ref
        self.use = use
        self.algorithm = algorithm
        self.peer = peer
        self.requestedSize = requestedSize
        self.sharedInfo = sharedInfo
        self.input = input
        self.interaction = interaction
        self.relayed = relayed
    }

    /// - Throws: errSecParam when the reference is not a key item's, `use` or `algorithm` is
    ///   missing, `use` names no use, an option has another type, a key exchange has no `peer`,
    ///   or the request does not carry exactly one secret.
    public init(decoding request: Request) throws {
        guard request.operation == .useKey, request.secrets.count == 1,
              case .data(let bytes)? = request.query[.valuePersistentRef],
              PersistentRef(bytes: bytes)?.itemClass == .key,
              let use = try request.options.string(.use).flatMap(KeyUse.init(rawValue:)),
              let algorithm = try request.options.string(.algorithm) else { throw KeychainStatus.param }
        ref = bytes
        interaction = request.query.filter { $0.key != .valuePersistentRef }
        self.use = use
        self.algorithm = algorithm
        peer = try request.options.data(.peer)
        requestedSize = try request.options.number(.requestedSize)
        sharedInfo = try request.options.data(.sharedInfo)
        if use == .keyExchange && peer == nil { throw KeychainStatus.param }
        input = request.secrets[0]
        if let uid = try request.options.number(.forUID) {
            guard let pid = try request.options.number(.forPID), let u = UInt32(exactly: uid), let p = Int32(exactly: pid), p > 0
            else { throw KeychainStatus.param }
            relayed = RelayedUse(uid: u, pid: p, executable: try request.options.string(.forExecutable),
                                 host: try request.options.string(.forHost))
        } else if try request.options.number(.forPID) != nil {
            throw KeychainStatus.param
        }
    }

    public var request: Request {
        var options: Options = [.use: .string(use.rawValue), .algorithm: .string(algorithm)]
        if let peer { options[.peer] = .data(peer) }
        if let requestedSize { options[.requestedSize] = .number(requestedSize) }
        if let sharedInfo { options[.sharedInfo] = .data(sharedInfo) }
        if let relayed {
            options[.forUID] = .number(Int64(relayed.uid))
            options[.forPID] = .number(Int64(relayed.pid))
            if let exe = relayed.executable { options[.forExecutable] = .string(exe) }
            if let host = relayed.host { options[.forHost] = .string(host) }
        }
        var query = interaction
        query[.valuePersistentRef] = .data(ref)
        return Request(.useKey, query: query, options: options, secrets: [input])
    }
}

/// `checkSignature`: whether `publicKey` made `signature` over `signedData` with `algorithm`.
/// Nothing in it is secret.
public struct SignatureCheck: TypedRequest, Sendable {
    /// Apple's `kSecAttrKeyType` code (73 EC, 42 RSA).
    public var keyType: Int64
    /// Apple's external representation: X9.63 for EC, PKCS#1 `RSAPublicKey` DER for RSA.
    public var publicKey: [UInt8]
    /// Apple's raw `SecKeyAlgorithm` name of a signature algorithm.
    public var algorithm: String
    public var signedData: [UInt8]
    public var signature: [UInt8]

    public init(keyType: Int64, publicKey: [UInt8], algorithm: String, signedData: [UInt8], signature: [UInt8]) {
        self.keyType = keyType
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.signedData = signedData
        self.signature = signature
    }

    /// - Throws: errSecParam for a missing option, one of another type, or a secret.
    public init(decoding request: Request) throws {
        guard request.operation == .checkSignature, request.secrets.isEmpty,
              let keyType = try request.options.number(.keyType), let publicKey = try request.options.data(.publicKey),
              let algorithm = try request.options.string(.algorithm), let signedData = try request.options.data(.signedData),
              let signature = try request.options.data(.signature) else { throw KeychainStatus.param }
        self.init(keyType: keyType, publicKey: publicKey, algorithm: algorithm, signedData: signedData, signature: signature)
    }

    public var request: Request {
        Request(.checkSignature, options: [.keyType: .number(keyType), .publicKey: .data(publicKey), .algorithm: .string(algorithm),
                                           .signedData: .data(signedData), .signature: .data(signature)])
    }
}

// MARK: unlock, changePassphrase, setSettings

/// The caller a relay asks for (the Secret Service provider for its D-Bus caller), as the bus
/// pinned it.
public struct RelayedCaller: Equatable, Sendable {
    public var uid: UInt32
    public var pid: Int32
    public init(uid: UInt32, pid: Int32) {
        self.uid = uid
        self.pid = pid
    }
}

/// `unlock`: with a passphrase, or with the one the approval program gives (option `by`),
/// optionally for a caller a relay names (`for-uid`, `for-pid`).
public enum UnlockRequest: TypedRequest {
    case passphrase(SecureBytes)
    case byApprovalProgram(for: RelayedCaller?)

    /// The `by` value that asks the approval program.
    static let approvalProgram = "approval-program"

    /// - Throws: errSecParam without a passphrase and without `by` `approval-program`, or with
    ///   one of `for-uid` and `for-pid` alone or out of range.
    public init(decoding request: Request) throws {
        guard request.operation == .unlock, request.secrets.count <= 1 else { throw KeychainStatus.param }
        if let passphrase = request.secrets.first {
            self = .passphrase(passphrase)
        } else {
            guard try request.options.string(.unlockBy) == Self.approvalProgram else { throw KeychainStatus.param }
            switch (try request.options.number(.forUID), try request.options.number(.forPID)) {
            case (nil, nil):
                self = .byApprovalProgram(for: nil)
            case (let uid?, let pid?):
                guard let u = UInt32(exactly: uid), let p = Int32(exactly: pid) else { throw KeychainStatus.param }
                self = .byApprovalProgram(for: RelayedCaller(uid: u, pid: p))
            default:
                throw KeychainStatus.param
            }
        }
    }

    public var request: Request {
        switch self {
        case .passphrase(let p): return Request(.unlock, secrets: [p])
        case .byApprovalProgram(let relayed):
            var options: Options = [.unlockBy: .string(Self.approvalProgram)]
            if let relayed {
                options[.forUID] = .number(Int64(relayed.uid))
                options[.forPID] = .number(Int64(relayed.pid))
            }
            return Request(.unlock, options: options)
        }
    }
}

/// `changePassphrase`: the old and the new passphrase (empty removes it), and a KDF preset.
public struct PassphraseChange: TypedRequest, Sendable {
    public var old: SecureBytes
    public var new: SecureBytes
    /// `interactive`, `moderate` or `sensitive`; the vault's own when nil.
    public var kdf: String?

    public init(old: SecureBytes, new: SecureBytes, kdf: String? = nil) {
        self.old = old
        self.new = new
        self.kdf = kdf
    }

    /// - Throws: errSecParam for a `kdf` that names no preset, or without both passphrases.
    public init(decoding request: Request) throws {
        guard request.operation == .changePassphrase, request.secrets.count == 2 else { throw KeychainStatus.param }
        kdf = try request.options.string(.kdf)
        if let kdf, KDFParameters(presetName: kdf) == nil { throw KeychainStatus.param }
        old = request.secrets[0]
        new = request.secrets[1]
    }

    /// The preset's parameters, when one is named.
    public var kdfParameters: KDFParameters? { kdf.flatMap(KDFParameters.init(presetName:)) }

    public var request: Request {
        Request(.changePassphrase, options: kdf.map { [.kdf: .string($0)] } ?? [:], secrets: [old, new])
    }
}

/// `setSettings`: the settings to change; the others stay. Every value is bounded
/// (`SettingLimits`); a request with one out of range changes none.
public struct SettingsChange: TypedRequest {
    public var lockTimeout: Int64?
    /// An absolute path, or "" to remove the program.
    public var approvalProgram: String?
    public var approvalTimeout: Int64?
    public var approvalRemember: Int64?
    /// 0 (never rotate) or a size in `SettingLimits.auditMaxSize`.
    public var auditMaxSize: Int64?
    /// The pinentry program unlock prompts run (`unlock-keychain`, the Secret Service's
    /// Prompt): an absolute path, or "" to ask as before.
    public var pinentry: String?

    public init(lockTimeout: Int64? = nil, approvalProgram: String? = nil, approvalTimeout: Int64? = nil,
                approvalRemember: Int64? = nil, auditMaxSize: Int64? = nil, pinentry: String? = nil) {
        self.pinentry = pinentry
        self.lockTimeout = lockTimeout
        self.approvalProgram = approvalProgram
        self.approvalTimeout = approvalTimeout
        self.approvalRemember = approvalRemember
        self.auditMaxSize = auditMaxSize
    }

    /// - Throws: errSecParam for a value of another type or out of its range, or a program
    ///   (approval, pinentry) that is neither "" nor an absolute path.
    public init(decoding request: Request) throws {
        guard request.operation == .setSettings else { throw KeychainStatus.param }
        let o = request.options
        func bounded(_ key: OptionKey, _ range: ClosedRange<Int64>) throws -> Int64? {
            guard let n = try o.number(key) else { return nil }
            guard range.contains(n) else { throw KeychainStatus.param }
            return n
        }
        lockTimeout = try bounded(.lockTimeout, SettingLimits.lockTimeout)
        approvalTimeout = try bounded(.approvalTimeout, SettingLimits.approvalTimeout)
        approvalRemember = try bounded(.approvalRemember, SettingLimits.approvalRemember)
        auditMaxSize = try o.number(.auditMaxSize) == 0 ? 0 : try bounded(.auditMaxSize, SettingLimits.auditMaxSize)
        approvalProgram = try o.string(.approvalProgram)
        if let p = approvalProgram, !p.isEmpty && !p.hasPrefix("/") { throw KeychainStatus.param }
        pinentry = try o.string(.pinentry)
        if let p = pinentry, !p.isEmpty && !p.hasPrefix("/") { throw KeychainStatus.param }
    }

    public var request: Request {
        var options: Options = [:]
        if let lockTimeout { options[.lockTimeout] = .number(lockTimeout) }
        if let approvalProgram { options[.approvalProgram] = .string(approvalProgram) }
        if let approvalTimeout { options[.approvalTimeout] = .number(approvalTimeout) }
        if let approvalRemember { options[.approvalRemember] = .number(approvalRemember) }
        if let auditMaxSize { options[.auditMaxSize] = .number(auditMaxSize) }
        if let pinentry { options[.pinentry] = .string(pinentry) }
        return Request(.setSettings, options: options)
    }
}

// MARK: audit

/// `audit`: read the log's lines, check its chain, or rotate it.
public enum AuditRequest: TypedRequest {
    case read(AuditQuery)
    /// Administrators only.
    case verify
    /// Administrators only.
    case rotate

    /// - Throws: errSecParam for an option of another type or a filter `AuditQuery` refuses.
    public init(decoding request: Request) throws {
        guard request.operation == .audit else { throw KeychainStatus.param }
        let verify = try request.options.flag(.verify), rotate = try request.options.flag(.rotate)
        if verify { self = .verify } else if rotate { self = .rotate } else { self = .read(try AuditQuery(request.options)) }
    }

    public var request: Request {
        switch self {
        case .read(let q): return Request(.audit, options: q.options)
        case .verify: return Request(.audit, options: [.verify: .bool(true)])
        case .rotate: return Request(.audit, options: [.rotate: .bool(true)])
        }
    }

    /// Whether the request needs an administrator.
    public var checksOrRotates: Bool {
        if case .read = self { return false }
        return true
    }
}

/// Which audit lines to read; every part is optional and all given must hold.
public struct AuditQuery: Sendable, Equatable {
    /// Epoch seconds, inclusive.
    public var since: Int64?
    public var until: Int64?
    public var uid: Int64?
    /// Recorded event names (`AuditEvent.isRecorded`).
    public var events: [String]?
    public var item: Item?

    /// An item by its reference, or the passwords of a service (or server) and account; an
    /// empty part matches any.
    public enum Item: Sendable, Equatable {
        /// 40 lowercase hex digits.
        case reference(String)
        case named(service: String, account: String)
    }

    public init(since: Int64? = nil, until: Int64? = nil, uid: Int64? = nil, events: [String]? = nil, item: Item? = nil) {
        self.since = since
        self.until = until
        self.uid = uid
        self.events = events
        self.item = item
    }

    /// - Throws: errSecParam for an option of another type, an empty or unknown event name, or
    ///   an `item-ref` that is not a persistent reference.
    public init(_ options: Options) throws {
        since = try options.number(.since)
        until = try options.number(.until)
        uid = try options.number(.uid)
        if let e = try options.string(.events) {
            let names = e.split(separator: ",").map(String.init)
            guard !names.isEmpty, names.allSatisfy(AuditEvent.isRecorded) else { throw KeychainStatus.param }
            events = names
        }
        let service = try options.string(.itemService), account = try options.string(.itemAccount)
        if let hex = try options.string(.itemRef) {
            guard let bytes = Hex.decode(hex), PersistentRef(bytes: bytes) != nil else { throw KeychainStatus.param }
            item = .reference(hex.lowercased())
        } else if service != nil || account != nil {
            item = .named(service: service ?? "", account: account ?? "")
        }
    }

    public var options: Options {
        var o: Options = [:]
        if let since { o[.since] = .number(since) }
        if let until { o[.until] = .number(until) }
        if let uid { o[.uid] = .number(uid) }
        if let events { o[.events] = .string(events.joined(separator: ",")) }
        switch item {
        case .reference(let hex)?: o[.itemRef] = .string(hex)
        case .named(let service, let account)?: o[.itemService] = .string(service); o[.itemAccount] = .string(account)
        case nil: break
        }
        return o
    }
}

// MARK: sync

/// `sync`: fleet sync's circle verbs (option `verb`) and the history of set-aside versions.
public enum SyncRequest: TypedRequest {
    /// Makes this host the first of a circle on `server` (a libpq connection string); with
    /// `pollMilliseconds`, it polls from the start (`set`).
    case initCircle(server: String, name: String?, pollMilliseconds: Int64? = nil)
    /// Asks to join the circle on `server`; the reply's `code` is for a member to approve.
    case join(server: String, name: String?, pollMilliseconds: Int64? = nil)
    case approve(code: String)
    /// Removes the member named `host` (a name, or 8 or more hex digits of its id).
    case remove(host: String)
    case leave
    case status
    /// The versions sync set aside, of a service and account (each optional), with secrets.
    case history(service: String?, account: String?, secrets: Bool)
    /// Sets the circle's retention (days a member may go unseen before pruning leaves it out),
    /// and this host's polling (milliseconds between rounds that hear no notification: 0 listens).
    /// At least one of the two.
    case set(retentionDays: Int64?, pollMilliseconds: Int64?)
    /// Writes the version kept in the history under `id` back as a local change.
    case restore(id: Int64)

    /// The verb's name on the wire.
    public var verb: String {
        switch self {
        case .initCircle: return "init"
        case .join: return "join"
        case .approve: return "approve"
        case .remove: return "remove"
        case .leave: return "leave"
        case .status: return "status"
        case .history: return "history"
        case .set: return "set"
        case .restore: return "restore"
        }
    }

    /// - Throws: errSecParam for a missing or unknown verb, init or join without a server,
    ///   remove without a host, set without a retention or polling, or with one out of range,
    ///   restore without an id, an option of another type.
    public init(decoding request: Request) throws {
        guard request.operation == .sync else { throw KeychainStatus.param }
        let o = request.options
        switch try o.string(.verb) {
        case "init"?, "join"?:
            guard let server = try o.string(.server), !server.isEmpty else { throw KeychainStatus.param }
            let name = try o.string(.name), poll = try o.number(.pollMilliseconds)
            guard poll.map(Self.isPoll) ?? true else { throw KeychainStatus.param }
            self = try o.string(.verb) == "init" ? .initCircle(server: server, name: name, pollMilliseconds: poll)
                                                 : .join(server: server, name: name, pollMilliseconds: poll)
        case "approve"?: self = .approve(code: try o.string(.code) ?? "")
        case "remove"?:
            guard let host = try o.string(.host), !host.isEmpty else { throw KeychainStatus.param }
            self = .remove(host: host)
        case "leave"?: self = .leave
        case "status"?: self = .status
        case "history"?:
            self = .history(service: try o.string(.service), account: try o.string(.account), secrets: try o.flag(.secrets))
        case "set"?:
            let days = try o.number(.retentionDays), poll = try o.number(.pollMilliseconds)
            guard days != nil || poll != nil, days.map({ $0 > 0 && $0 <= Self.maximumRetentionDays }) ?? true,
                  poll.map(Self.isPoll) ?? true else {
                throw KeychainStatus.param
            }
            self = .set(retentionDays: days, pollMilliseconds: poll)
        case "restore"?:
            guard let id = try o.number(.historyID) else { throw KeychainStatus.param }
            self = .restore(id: id)
        default: throw KeychainStatus.param
        }
    }

    public var request: Request {
        var o: Options = [.verb: .string(verb)]
        switch self {
        case .initCircle(let server, let name, let poll), .join(let server, let name, let poll):
            o[.server] = .string(server)
            if let name { o[.name] = .string(name) }
            if let poll { o[.pollMilliseconds] = .number(poll) }
        case .approve(let code): o[.code] = .string(code)
        case .remove(let host): o[.host] = .string(host)
        case .leave, .status: break
        case .set(let days, let poll):
            if let days { o[.retentionDays] = .number(days) }
            if let poll { o[.pollMilliseconds] = .number(poll) }
        case .restore(let id): o[.historyID] = .number(id)
        case .history(let service, let account, let secrets):
            if let service { o[.service] = .string(service) }
            if let account { o[.account] = .string(account) }
            if secrets { o[.secrets] = .bool(true) }
        }
        return Request(.sync, options: o)
    }

    /// The longest retention `sync set` takes: 100 years, far from PostgreSQL's interval limits.
    public static let maximumRetentionDays: Int64 = 36_500
    /// The shortest and longest wait between polled rounds (`sync set --poll`), in ms: 0.1 s and an hour.
    public static let pollMilliseconds: ClosedRange<Int64> = 100...3_600_000

    /// 0 (listen) or a wait in `pollMilliseconds`.
    public static func isPoll(_ milliseconds: Int64) -> Bool { milliseconds == 0 || pollMilliseconds.contains(milliseconds) }
}

// MARK: mount, unmount, watch

/// `mount` and `unmount`: a FUSE mount the daemon serves. The mount's `/dev/fuse` descriptor,
/// when the caller mounted it itself, travels beside the request (`Request.descriptor`).
public enum MountRequest: TypedRequest {
    /// Serves `point` with `options` (comma-separated `MountOptions`, "" for none).
    case mount(point: String, options: String)
    case unmount(point: String)

    /// - Throws: errSecParam without a `mountpoint` string, or `options` of another type.
    public init(decoding request: Request) throws {
        guard let point = try request.options.string(.mountpoint) else { throw KeychainStatus.param }
        switch request.operation {
        case .mount: self = .mount(point: point, options: try request.options.string(.mountOptions) ?? "")
        case .unmount: self = .unmount(point: point)
        default: throw KeychainStatus.param
        }
    }

    public var point: String {
        switch self {
        case .mount(let point, _), .unmount(let point): return point
        }
    }

    public var request: Request {
        switch self {
        case .mount(let point, let options):
            return Request(.mount, options: [.mountpoint: .string(point), .mountOptions: .string(options)])
        case .unmount(let point):
            return Request(.unmount, options: [.mountpoint: .string(point)])
        }
    }
}

/// `watch`: the changes of a service and account (each optional); locks and unlocks always.
public struct WatchRequest: TypedRequest {
    public var service: String?
    public var account: String?

    public init(service: String? = nil, account: String? = nil) {
        self.service = service
        self.account = account
    }

    /// - Throws: errSecParam for `service` or `account` of another type than string.
    public init(decoding request: Request) throws {
        guard request.operation == .watch else { throw KeychainStatus.param }
        service = try request.options.string(.service)
        account = try request.options.string(.account)
    }

    public var request: Request {
        var o: Options = [:]
        if let service { o[.service] = .string(service) }
        if let account { o[.account] = .string(account) }
        return Request(.watch, options: o)
    }
}

// MARK: groupAdd, groupSet, groupRemove, groupList

/// The access group operations. A change that does not decode is still audited by the daemon
/// (its `groups-changed-failed` line).
public enum GroupRequest: TypedRequest {
    case add(GroupChange)
    case set(GroupChange)
    case remove(name: String)
    case list

    /// - Throws: errSecParam for a name missing or outside `SettingLimits.groupNameBytes`, an
    ///   id or mode outside its range, a grant other than 0 or 1, an option of another type.
    public init(decoding request: Request) throws {
        switch request.operation {
        case .groupList: self = .list
        case .groupAdd: self = .add(try GroupChange(request.options))
        case .groupSet: self = .set(try GroupChange(request.options))
        case .groupRemove: self = .remove(name: try GroupChange.name(request.options))
        default: throw KeychainStatus.param
        }
    }

    public var request: Request {
        switch self {
        case .list: return Request(.groupList)
        case .add(let change): return Request(.groupAdd, options: change.options)
        case .set(let change): return Request(.groupSet, options: change.options)
        case .remove(let name): return Request(.groupRemove, options: [.name: .string(name)])
        }
    }
}

/// A group's definition to add, or the parts of it to set; nil parts stay as they are (a new
/// group has the daemon's user and group, mode 0400, no grants, no executables).
public struct GroupChange: Sendable, Equatable {
    public var name: String
    public var owner: UInt32?
    public var gid: UInt32?
    /// Owner/group/other bits, at most 0o777.
    public var mode: UInt32?
    public var grantsLock: Bool?
    public var grantsAudit: Bool?
    /// The trusted executables; an empty list trusts none.
    public var executables: [String]?

    public init(name: String, owner: UInt32? = nil, gid: UInt32? = nil, mode: UInt32? = nil, grantsLock: Bool? = nil,
                grantsAudit: Bool? = nil, executables: [String]? = nil) {
        self.name = name
        self.owner = owner
        self.gid = gid
        self.mode = mode
        self.grantsLock = grantsLock
        self.grantsAudit = grantsAudit
        self.executables = executables
    }

    static func name(_ options: Options) throws -> String {
        guard let name = try options.string(.name), SettingLimits.groupNameBytes.contains(name.utf8.count) else {
            throw KeychainStatus.param
        }
        return name
    }

    init(_ options: Options) throws {
        func bounded(_ key: OptionKey, _ range: ClosedRange<Int64>) throws -> UInt32? {
            guard let n = try options.number(key) else { return nil }
            guard range.contains(n) else { throw KeychainStatus.param }
            return UInt32(n)
        }
        func grant(_ key: OptionKey) throws -> Bool? {
            guard let n = try options.number(key) else { return nil }
            guard n == 0 || n == 1 else { throw KeychainStatus.param }
            return n == 1
        }
        name = try Self.name(options)
        owner = try bounded(.owner, SettingLimits.id)
        gid = try bounded(.gid, SettingLimits.id)
        mode = try bounded(.mode, SettingLimits.groupMode)
        grantsLock = try grant(.grantsLock)
        grantsAudit = try grant(.grantsAudit)
        executables = try options.string(.executables).map { $0.isEmpty ? [] : $0.split(separator: "\n").map(String.init) }
    }

    var options: Options {
        var o: Options = [.name: .string(name)]
        if let owner { o[.owner] = .number(Int64(owner)) }
        if let gid { o[.gid] = .number(Int64(gid)) }
        if let mode { o[.mode] = .number(Int64(mode)) }
        if let grantsLock { o[.grantsLock] = .number(grantsLock ? 1 : 0) }
        if let grantsAudit { o[.grantsAudit] = .number(grantsAudit ? 1 : 0) }
        if let executables { o[.executables] = .string(executables.joined(separator: "\n")) }
        return o
    }
}

// MARK: export, import

/// `export`: a new backup sealed with a passphrase, or the next piece of one larger than a frame.
public enum ExportRequest: TypedRequest {
    /// The first (or only) piece. `kdf` a preset name (moderate when nil).
    case start(passphrase: SecureBytes, kdf: String?, synchronizableOnly: Bool)
    /// The piece at `offset` of the numbered transfer the start reply gave.
    case piece(transfer: Int64, offset: Int64)

    /// - Throws: errSecParam for a piece without its offset, a start without a non-empty
    ///   passphrase or with a `kdf` that names no preset, an option of another type.
    public init(decoding request: Request) throws {
        guard request.operation == .export, request.secrets.count <= 1 else { throw KeychainStatus.param }
        let o = request.options
        if let transfer = try o.number(.transfer) {
            guard let offset = try o.number(.offset) else { throw KeychainStatus.param }
            self = .piece(transfer: transfer, offset: offset)
            return
        }
        guard let passphrase = request.secrets.first, passphrase.count > 0 else { throw KeychainStatus.param }
        let kdf = try o.string(.kdf)
        if let kdf, KDFParameters(presetName: kdf) == nil { throw KeychainStatus.param }
        self = .start(passphrase: passphrase, kdf: kdf, synchronizableOnly: try o.flag(.synchronizableOnly))
    }

    public var request: Request {
        switch self {
        case .start(let passphrase, let kdf, let synchronizableOnly):
            var o: Options = [:]
            if let kdf { o[.kdf] = .string(kdf) }
            if synchronizableOnly { o[.synchronizableOnly] = .bool(true) }
            return Request(.export, options: o, secrets: [passphrase])
        case .piece(let transfer, let offset):
            return Request(.export, options: [.transfer: .number(transfer), .offset: .number(offset)])
        }
    }
}

/// `import`: a backup in pieces, or the purge of items bound to another machine.
public enum ImportRequest: TypedRequest {
    case piece(BackupPiece)
    case purgeOtherDevice

    /// - Throws: errSecParam for a piece without `data`, a policy or groups value the table
    ///   does not name, an option of another type.
    public init(decoding request: Request) throws {
        guard request.operation == .import, request.secrets.count <= 1 else { throw KeychainStatus.param }
        let o = request.options
        if try o.flag(.purgeOtherDevice) {
            self = .purgeOtherDevice
            return
        }
        guard let data = try o.data(.data) else { throw KeychainStatus.param }
        let policy = try o.string(.policy).map { name -> ImportPolicy in
            guard let p = ImportPolicy(rawValue: name) else { throw KeychainStatus.param }
            return p
        }
        let groups = try o.string(.groups).map { name -> BackupPiece.Groups in
            guard let g = BackupPiece.Groups(rawValue: name) else { throw KeychainStatus.param }
            return g
        }
        self = .piece(BackupPiece(data: data, size: try o.number(.size), transfer: try o.number(.transfer), policy: policy,
                                  groups: groups, passphrase: request.secrets.first))
    }

    public var request: Request {
        switch self {
        case .purgeOtherDevice: return Request(.import, options: [.purgeOtherDevice: .bool(true)])
        case .piece(let p):
            var o: Options = [.data: .data(p.data)]
            if let size = p.size { o[.size] = .number(size) }
            if let transfer = p.transfer { o[.transfer] = .number(transfer) }
            if let policy = p.policy { o[.policy] = .string(policy.rawValue) }
            if let groups = p.groups { o[.groups] = .string(groups.rawValue) }
            return Request(.import, options: o, secrets: p.passphrase.map { [$0] } ?? [])
        }
    }
}

/// One piece of a backup on its way to the daemon.
public struct BackupPiece {
    /// What to do with the backup's groups this vault lacks: create them, or name them.
    public enum Groups: String, Sendable {
        case keep, skip
    }

    public var data: [UInt8]
    /// The whole backup's size; needed on the first piece.
    public var size: Int64?
    /// The numbered transfer the first piece's reply gave; nil on the first.
    public var transfer: Int64?
    /// keep-newer when nil.
    public var policy: ImportPolicy?
    /// keep when nil.
    public var groups: Groups?
    /// The backup's passphrase, with the last piece.
    public var passphrase: SecureBytes?

    public init(data: [UInt8], size: Int64? = nil, transfer: Int64? = nil, policy: ImportPolicy? = nil, groups: Groups? = nil,
                passphrase: SecureBytes? = nil) {
        self.data = data
        self.size = size
        self.transfer = transfer
        self.policy = policy
        self.groups = groups
        self.passphrase = passphrase
    }
}

// MARK: add, copyMatching, update, delete

/// `add` (SecItemAdd): the item's attributes and secret; option `generate` "private" asks the
/// daemon to make a key item's private key (`KeyGeneration` in the daemon), with no secret.
public struct ItemAdd: TypedRequest {
    public var attributes: Attributes
    public var secret: SecureBytes?
    /// `private`, or nil for an item whose secret is given.
    public var generate: String?

    /// The `generate` value that asks for a private key.
    public static let privateKey = "private"

    public init(attributes: Attributes, secret: SecureBytes? = nil, generate: String? = nil) {
        self.attributes = attributes
        self.secret = secret
        self.generate = generate
    }

    /// - Throws: errSecParam for a `generate` of another type than string.
    public init(decoding request: Request) throws {
        guard request.operation == .add, request.secrets.count <= 1 else { throw KeychainStatus.param }
        attributes = request.query
        secret = request.secrets.first
        generate = try request.options.string(.generate)
    }

    public var request: Request {
        Request(.add, query: attributes, options: generate.map { [.generate: .string($0)] } ?? [:],
                secrets: secret.map { [$0] } ?? [])
    }
}

/// `copyMatching` (SecItemCopyMatching): Apple's query dictionary, as given.
public struct ItemSearch: TypedRequest {
    public var query: Attributes

    public init(query: Attributes) { self.query = query }

    public init(decoding request: Request) throws {
        guard request.operation == .copyMatching, request.secrets.isEmpty else { throw KeychainStatus.param }
        query = request.query
    }

    public var request: Request { Request(.copyMatching, query: query) }
}

/// `lookup`: a `copyMatching` of one password by its class's whole primary key, typed, so that
/// neither end makes a query dictionary. It stands for exactly one query shape (`init?(query:)`):
/// the class (`genp` or `inet`, by its raw name), every primary-key attribute of the class, an
/// access group if any (a string), and any of `r_Data`, `r_Attributes`, `r_PersistentRef` as
/// booleans; besides them only what such a search ignores or takes as its default: `m_Limit`
/// `m_LimitOne`, and `nleg` (kSecUseDataProtectionKeychain) as a boolean. The daemon answers it
/// as it answers that query (`query`) sent as `copyMatching`: the same result, status, audit
/// lines and approvals.
public struct ItemLookup: TypedRequest, Sendable, Equatable {
    public var itemClass: ItemClass
    /// The values of `itemClass.primaryKey`'s attributes, in its order, as the caller gave them.
    public var primaryKey: [AttributeValue]
    public var returnData: Bool
    public var returnAttributes: Bool
    public var returnPersistentRef: Bool
    /// `agrp` in the query, when given.
    public var accessGroup: String?

    /// The classes a lookup may name, by their frozen wire codes.
    private static let classCodes: [(ItemClass, UInt8)] = [(.genericPassword, 1), (.internetPassword, 2)]

    public init(itemClass: ItemClass, primaryKey: [AttributeValue], returnData: Bool = false, returnAttributes: Bool = false,
                returnPersistentRef: Bool = false, accessGroup: String? = nil) {
        precondition(Self.classCodes.contains { $0.0 == itemClass } && primaryKey.count == itemClass.primaryKey.count,
                     "a lookup names a password class's whole primary key")
        self.itemClass = itemClass
        self.primaryKey = primaryKey
        self.returnData = returnData
        self.returnAttributes = returnAttributes
        self.returnPersistentRef = returnPersistentRef
        self.accessGroup = accessGroup
    }

    /// What a query of a lookup's shape says besides its primary key's values.
    private struct Shape {
        var itemClass: ItemClass
        var returnBits: UInt8
        var accessGroup: String?
    }

    /// The shape of a query that stands for a lookup (above); nil for any other. One pass over
    /// the query, no dictionary made.
    private static func shape(of query: Attributes) -> Shape? {
        let itemClass: ItemClass
        switch query[.class] {
        case .string(ItemClass.genericPassword.rawValue)?: itemClass = .genericPassword
        case .string(ItemClass.internetPassword.rawValue)?: itemClass = .internetPassword
        default: return nil
        }
        let names = itemClass.primaryKey
        // The class, the whole primary key, and at most six return, limit, group and keychain keys.
        guard query.count >= 1 + names.count, query.count <= 1 + names.count + 6 else { return nil }
        var bits: UInt8 = 0
        var named = 0
        var group: String?
        for (key, value) in query {
            if key == .class { continue }
            if names.contains(key) {
                named += 1
                continue
            }
            switch (key, value) {
            case (.returnData, .bool(let b)): if b { bits |= 1 }
            case (.returnAttributes, .bool(let b)): if b { bits |= 2 }
            case (.returnPersistentRef, .bool(let b)): if b { bits |= 4 }
            case (.accessGroup, .string(let g)): group = g
            case (.matchLimit, .string(ValueName.matchLimitOne)), (.useDataProtectionKeychain, .bool): continue  // as if absent
            default: return nil
            }
        }
        guard named == names.count else { return nil }
        return Shape(itemClass: itemClass, returnBits: bits, accessGroup: group)
    }

    /// The lookup a `copyMatching` query stands for; nil for a query of any other shape (which
    /// goes as `copyMatching`).
    public init?(query: Attributes) {
        guard let s = Self.shape(of: query) else { return nil }
        self.init(itemClass: s.itemClass, primaryKey: s.itemClass.primaryKey.map { query[$0]! }, returnData: s.returnBits & 1 != 0,
                  returnAttributes: s.returnBits & 2 != 0, returnPersistentRef: s.returnBits & 4 != 0, accessGroup: s.accessGroup)
    }

    /// Writes into `out` the payload of the lookup a `copyMatching` of `query` stands for: the
    /// bytes `ItemLookup(query:)`'s `request.encoded()` holds, made without an array, a
    /// dictionary or guarded memory (a lookup carries no secret). Returns their count; nil
    /// when the query has another shape or the payload does not fit `out`.
    public static func payload(for query: Attributes, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard let s = shape(of: query) else { return nil }
        let names = s.itemClass.primaryKey
        return write(s.itemClass, returnBits: s.returnBits, values: { query[names[$0]]! }, accessGroup: s.accessGroup, into: out)
    }

    /// The payload (Messages.swift) written at the start of `out`, the primary key's values
    /// given by position; its size, or nil when it does not fit (nothing is written past the end).
    private static func write(_ itemClass: ItemClass, returnBits: UInt8, values: (Int) -> AttributeValue, accessGroup: String?,
                              into out: UnsafeMutableRawBufferPointer) -> Int? {
        let count = itemClass.primaryKey.count
        guard out.count >= 7 else { return nil }
        out.storeBytes(of: WireProtocol.version.bigEndian, toByteOffset: 0, as: UInt16.self)
        out[2] = Operation.lookup.rawValue
        out[3] = classCodes.first { $0.0 == itemClass }!.1
        out[4] = returnBits
        out[5] = UInt8(count)
        var offset = 6
        for i in 0..<count {
            guard let next = AttributeCoding.write(values(i), into: out, at: offset) else { return nil }
            offset = next
        }
        guard var group = accessGroup else {
            guard offset < out.count else { return nil }
            out[offset] = 0
            return offset + 1
        }
        return group.withUTF8 { g in
            guard 5 + g.count <= out.count - offset else { return nil }
            out[offset] = 1
            out.storeBytes(of: UInt32(g.count).bigEndian, toByteOffset: offset + 1, as: UInt32.self)
            if g.count > 0 { (out.baseAddress! + offset + 5).copyMemory(from: g.baseAddress!, byteCount: g.count) }
            return offset + 5 + g.count
        }
    }

    /// The `copyMatching` query this lookup stands for (with the return keys set to true only;
    /// one set to false asks for nothing, as its absence does, as `m_LimitOne` and `nleg` do).
    public var query: Attributes {
        var q: Attributes = [.class: .itemClass(itemClass)]
        for (name, value) in zip(itemClass.primaryKey, primaryKey) { q[name] = value }
        if returnData { q[.returnData] = .bool(true) }
        if returnAttributes { q[.returnAttributes] = .bool(true) }
        if returnPersistentRef { q[.returnPersistentRef] = .bool(true) }
        if let accessGroup { q[.accessGroup] = .string(accessGroup) }
        return q
    }

    public init(decoding request: Request) throws {
        guard request.operation == .lookup, let lookup = request.lookup, request.secrets.isEmpty else { throw KeychainStatus.param }
        self = lookup
    }

    public var request: Request { Request(self) }

    private var returnBits: UInt8 { (returnData ? 1 : 0) | (returnAttributes ? 2 : 0) | (returnPersistentRef ? 4 : 0) }

    /// The whole request payload (Messages.swift), in guarded memory as every request is.
    func encoded() throws -> SecureBytes {
        var size = 2 + 1 + 3 + 1
        for v in primaryKey { size += AttributeCoding.encodedSize(v) }
        if let accessGroup { size += 4 + accessGroup.utf8.count }
        let out = try mapAllocationFailure { try SecureBytes(count: size) }
        let written = out.withUnsafeMutableBytes { [primaryKey] in
            Self.write(itemClass, returnBits: returnBits, values: { primaryKey[$0] }, accessGroup: accessGroup, into: $0)
        }
        precondition(written == size, "a lookup's payload is the size counted for it")
        return out
    }

    /// Reads the payload after the operation. - Throws: `decode` when malformed.
    static func read(from r: inout ByteReader) throws -> ItemLookup {
        do {
            let code = try r.u8()
            guard let itemClass = classCodes.first(where: { $0.1 == code })?.0 else { throw KeychainStatus.decode }
            let bits = try r.u8()
            guard bits & ~7 == 0, Int(try r.u8()) == itemClass.primaryKey.count else { throw KeychainStatus.decode }
            var values: [AttributeValue] = []
            values.reserveCapacity(itemClass.primaryKey.count)
            for _ in 0..<itemClass.primaryKey.count { values.append(try AttributeCoding.readValue(from: &r)) }
            let group: String?
            switch try r.u8() {
            case 0: group = nil
            case 1: group = String(decoding: try r.lengthPrefixedView(), as: UTF8.self)
            default: throw KeychainStatus.decode
            }
            return ItemLookup(itemClass: itemClass, primaryKey: values, returnData: bits & 1 != 0,
                              returnAttributes: bits & 2 != 0, returnPersistentRef: bits & 4 != 0, accessGroup: group)
        } catch is ByteReader.Truncated {
            throw KeychainStatus.decode
        }
    }
}

/// `update` (SecItemUpdate): the query, the attributes to change and, when given, a new secret.
public struct ItemUpdate: TypedRequest {
    public var query: Attributes
    public var changes: Attributes
    public var secret: SecureBytes?

    public init(query: Attributes, changes: Attributes, secret: SecureBytes? = nil) {
        self.query = query
        self.changes = changes
        self.secret = secret
    }

    public init(decoding request: Request) throws {
        guard request.operation == .update, request.secrets.count <= 1 else { throw KeychainStatus.param }
        query = request.query
        changes = request.changes
        secret = request.secrets.first
    }

    public var request: Request { Request(.update, query: query, changes: changes, secrets: secret.map { [$0] } ?? []) }
}

/// `delete` (SecItemDelete): the query.
public struct ItemDelete: TypedRequest {
    public var query: Attributes

    public init(query: Attributes) { self.query = query }

    public init(decoding request: Request) throws {
        guard request.operation == .delete, request.secrets.isEmpty else { throw KeychainStatus.param }
        query = request.query
    }

    public var request: Request { Request(.delete, query: query) }
}

// MARK: ping, info, lock, stop, verify

/// An operation that carries nothing but its code: `ping`, `info`, `lock`, `stop`, `verify`.
public struct BareRequest: TypedRequest {
    public let operation: Operation

    /// The operations that take no query, options or secret.
    public static let operations: Set<Operation> = [.ping, .info, .lock, .stop, .verify]

    public init(_ operation: Operation) {
        precondition(Self.operations.contains(operation), "\(operation) carries more than its code")
        self.operation = operation
    }

    public init(decoding request: Request) throws {
        guard Self.operations.contains(request.operation), request.secrets.isEmpty else { throw KeychainStatus.param }
        operation = request.operation
    }

    public var request: Request { Request(operation) }
}

// MARK: serviceTimes

/// `serviceTimes`: the daemon's request timings since it started or was last reset.
public struct ServiceTimesRequest: TypedRequest {
    /// Counting starts again after this reply.
    public var reset: Bool

    public init(reset: Bool = false) { self.reset = reset }

    /// - Throws: errSecParam for a `reset` of another type.
    public init(decoding request: Request) throws {
        guard request.operation == .serviceTimes, request.secrets.isEmpty else { throw KeychainStatus.param }
        reset = try request.options.flag(.reset)
    }

    public var request: Request { Request(.serviceTimes, options: reset ? [.reset: .bool(true)] : [:]) }
}
