import KeychainModel

/// The name of a request option: the string the socket protocol carries in a request's options
/// record (`Request.options`). This file is the one table of those names, with what each means
/// and which operation reads it (docs/operations.md repeats it). A name means what its operation
/// says; several operations share a name (`service`, `name`, `transfer`, `kdf`).
///
/// An operation ignores options it does not name. Every operation's typed request
/// (TypedRequests.swift: `ItemAdd`, `KeyUseRequest`, `UnlockRequest`, `AuditRequest`,
/// `SyncRequest`, `MountRequest`, ...) is built from and read into these options; a missing or
/// wrongly typed option it needs is errSecParam.
///
/// A string literal converts to a key, so tests may write the raw names; inside Sources every
/// option is one of the named constants below.
public struct OptionKey: RawRepresentable, Hashable, Comparable, Sendable, ExpressibleByStringLiteral,
                         CustomStringConvertible {
    public let rawValue: String

    public var description: String { rawValue }

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    /// Ordered by the raw name: the options record is written in this order.
    public static func < (a: OptionKey, b: OptionKey) -> Bool { a.rawValue < b.rawValue }
}

/// A request's options, by `OptionKey`. Encoded as attributes are (`AttributeCoding`), each key
/// by its raw name, so the bytes are those of the string-keyed record they replace.
public typealias Options = [OptionKey: AttributeValue]

extension Dictionary where Key == OptionKey, Value == AttributeValue {
    /// The options by their raw names, as the record on the wire holds them.
    public var fields: Fields { Fields(uniqueKeysWithValues: map { ($0.key.rawValue, $0.value) }) }
    /// Options read from a record of raw names.
    public init(fields: Fields) { self.init(uniqueKeysWithValues: fields.map { (OptionKey(rawValue: $0.key), $0.value) }) }
}

// MARK: checkSignature
extension OptionKey {
    /// checkSignature, number: Apple's `kSecAttrKeyType` code of `public-key`. Required.
    public static let keyType = OptionKey(rawValue: "key-type")
    /// checkSignature, data: the public key, Apple's external representation. Required.
    public static let publicKey = OptionKey(rawValue: "public-key")
    /// checkSignature, data: the signed bytes. Required.
    public static let signedData = OptionKey(rawValue: "signed-data")
    /// checkSignature, data: the signature, in Apple's form for `algorithm`. Required.
    public static let signature = OptionKey(rawValue: "signature")
}

// MARK: useKey
extension OptionKey {
    /// useKey, string: `sign`, `decrypt` or `keyExchange` (`KeyUse`). Required.
    public static let use = OptionKey(rawValue: "use")
    /// useKey and checkSignature, string: Apple's raw `SecKeyAlgorithm` name. Required; an
    /// unknown name is errSecUnimplemented.
    public static let algorithm = OptionKey(rawValue: "algorithm")
    /// useKey (keyExchange), data: the other side's public key, Apple's external representation.
    /// Required for a key exchange.
    public static let peer = OptionKey(rawValue: "peer")
    /// useKey (keyExchange), number: the shared secret's length for a KDF algorithm.
    public static let requestedSize = OptionKey(rawValue: "requestedSize")
    /// useKey (keyExchange), data: the KDF's shared info (none when absent).
    public static let sharedInfo = OptionKey(rawValue: "sharedInfo")
}

// MARK: add
extension OptionKey {
    /// add, string `private`: the daemon makes the key item's private key (`KeyGeneration`).
    public static let generate = OptionKey(rawValue: "generate")
}

// MARK: unlock, changePassphrase, setSettings
extension OptionKey {
    /// unlock without a secret, string `approval-program`: the approval program gives the
    /// passphrase. Required when no passphrase is sent.
    public static let unlockBy = OptionKey(rawValue: "by")
    /// unlock by the approval program, numbers, both or neither: the uid and pid of the caller a
    /// relay asks for (the Secret Service's D-Bus caller); taken only from the daemon's own
    /// executable. useKey, numbers, both or neither: the relay's client (the SSH agent's ssh),
    /// written into the use's audit line, its uid the caller's or root's.
    public static let forUID = OptionKey(rawValue: "for-uid")
    public static let forPID = OptionKey(rawValue: "for-pid")
    /// useKey, strings, with `for-uid`: the relay's client's executable, and what the use is
    /// for (the SSH agent: the bound host key's fingerprint); audited, nothing else.
    public static let forExecutable = OptionKey(rawValue: "for-exe")
    public static let forHost = OptionKey(rawValue: "for-host")
    /// changePassphrase and export, string: a KDF preset (`interactive`, `moderate`, `sensitive`).
    public static let kdf = OptionKey(rawValue: "kdf")
    /// setSettings, number: seconds of idleness before the vault locks (0 never).
    public static let lockTimeout = OptionKey(rawValue: "lock-timeout")
    /// setSettings, string: the approval program's absolute path ("" removes it).
    public static let approvalProgram = OptionKey(rawValue: "approval-program")
    /// setSettings, number: seconds one approval program run may take.
    public static let approvalTimeout = OptionKey(rawValue: "approval-timeout")
    /// setSettings, number: seconds an approval is remembered per program and item.
    public static let approvalRemember = OptionKey(rawValue: "approval-remember")
    /// setSettings, string: the pinentry program's absolute path that unlock prompts run ("" removes it).
    public static let pinentry = OptionKey(rawValue: "pinentry")
    /// setSettings, number: the audit log's size that rotates it (0 never).
    public static let auditMaxSize = OptionKey(rawValue: "audit-max-size")
}

// MARK: audit
extension OptionKey {
    /// audit, bool: check the log's chain instead of reading it (administrators).
    public static let verify = OptionKey(rawValue: "verify")
    /// audit, bool: start a new log file (administrators).
    public static let rotate = OptionKey(rawValue: "rotate")
    /// audit, number: the earliest line's time, epoch seconds, inclusive.
    public static let since = OptionKey(rawValue: "since")
    /// audit, number: the latest line's time, epoch seconds, inclusive.
    public static let until = OptionKey(rawValue: "until")
    /// audit, number: the lines of this uid.
    public static let uid = OptionKey(rawValue: "uid")
    /// audit, string: event names, comma-separated.
    public static let events = OptionKey(rawValue: "events")
    /// audit, string: the lines of the item with this reference (40 hex digits).
    public static let itemRef = OptionKey(rawValue: "item-ref")
    /// audit, string: the lines of the passwords with this service (or server).
    public static let itemService = OptionKey(rawValue: "item-service")
    /// audit, string: the lines of the passwords with this account.
    public static let itemAccount = OptionKey(rawValue: "item-account")
}

// MARK: sync, watch
extension OptionKey {
    /// sync, string: the circle verb (`SyncRequest`): init, join, approve, remove, leave,
    /// status, history, set, restore. Required.
    public static let verb = OptionKey(rawValue: "verb")
    /// sync init and join, string: a libpq connection string without a password. Required.
    public static let server = OptionKey(rawValue: "server")
    /// sync init and join, string: this host's name in the circle; groupAdd, groupSet,
    /// groupRemove, string: the group's name (required).
    public static let name = OptionKey(rawValue: "name")
    /// sync approve, string: the join's code.
    public static let code = OptionKey(rawValue: "code")
    /// sync remove, string: the member to remove. Required.
    public static let host = OptionKey(rawValue: "host")
    /// sync history and watch, string: only items of this service.
    public static let service = OptionKey(rawValue: "service")
    /// sync history and watch, string: only items of this account.
    public static let account = OptionKey(rawValue: "account")
    /// sync history, bool: the versions' secrets too.
    public static let secrets = OptionKey(rawValue: "secrets")
    /// sync set, number: the circle's retention in days, 1 to 36500. This or `poll-ms`.
    public static let retentionDays = OptionKey(rawValue: "retention-days")
    /// sync set, init and join, number: milliseconds between this host's rounds without LISTEN,
    /// 100 to 3600000, or 0 (it listens).
    public static let pollMilliseconds = OptionKey(rawValue: "poll-ms")
    /// sync restore, number: the id of a version kept in the history. Required.
    public static let historyID = OptionKey(rawValue: "history-id")
}

// MARK: mount, unmount
extension OptionKey {
    /// mount and unmount, string: the mount point. Required.
    public static let mountpoint = OptionKey(rawValue: "mountpoint")
    /// mount, string: the mount options, comma-separated (`MountOptions`).
    public static let mountOptions = OptionKey(rawValue: "options")
}

// MARK: groupAdd, groupSet (and `name` above)
extension OptionKey {
    /// groupAdd, groupSet, number: the group's owner uid.
    public static let owner = OptionKey(rawValue: "owner")
    /// groupAdd, groupSet, number: the group's gid.
    public static let gid = OptionKey(rawValue: "gid")
    /// groupAdd, groupSet, number: the group's mode (owner/group/other bits).
    public static let mode = OptionKey(rawValue: "mode")
    /// groupAdd, groupSet, number 0 or 1: entitled callers may lock the vault.
    public static let grantsLock = OptionKey(rawValue: "lock")
    /// groupAdd, groupSet, number 0 or 1: entitled callers may read the audit log.
    public static let grantsAudit = OptionKey(rawValue: "audit")
    /// groupAdd, groupSet, string: the trusted executables, one path a line ("" none).
    public static let executables = OptionKey(rawValue: "exe")
}

// MARK: export, import
extension OptionKey {
    /// export, bool: only synchronizable items.
    public static let synchronizableOnly = OptionKey(rawValue: "synchronizable-only")
    /// export and import, number: the numbered transfer a piece belongs to.
    public static let transfer = OptionKey(rawValue: "transfer")
    /// export with `transfer`, number: the offset of the piece asked for.
    public static let offset = OptionKey(rawValue: "offset")
    /// import, data: a piece of the backup. Required.
    public static let data = OptionKey(rawValue: "data")
    /// import, number: the whole backup's size, with the first piece.
    public static let size = OptionKey(rawValue: "size")
    /// import, string: `ImportPolicy` (keep-newer when absent).
    public static let policy = OptionKey(rawValue: "policy")
    /// import, string `keep` or `skip`: create the backup's groups this vault lacks, or name them.
    public static let groups = OptionKey(rawValue: "groups")
    /// import, bool: delete ThisDeviceOnly items bound to another machine instead.
    public static let purgeOtherDevice = OptionKey(rawValue: "purge-other-device")
}

// MARK: serviceTimes
extension OptionKey {
    /// serviceTimes, bool: start counting again after this reply.
    public static let reset = OptionKey(rawValue: "reset")
}
