/// Every event the audit log records, by the name written on disk (docs/cli.md, "The audit log").
/// The names are frozen: a log verifies only while every line keeps the bytes it was chained with.
public enum AuditEvent: String, CaseIterable, Sendable {
    case unlock, unlockFailed = "unlock-failed", lock, stop
    case add, read, update, delete
    case denied, damaged
    case mount, unmount
    case fileOpenRead = "file-open-read", fileOpenWrite = "file-open-write"
    case fileDenied = "file-denied", fileDamaged = "file-damaged"
    case presenceApproved = "presence-approved", presenceDenied = "presence-denied"
    case groupsChanged = "groups-changed", passphraseChanged = "passphrase-changed"
    case export, `import`, imported, purgeOtherDevice = "purge-other-device"
    case verify
    case syncInit = "sync-init", syncJoin = "sync-join", syncApprove = "sync-approve", syncLeave = "sync-leave"
    case syncUpdate = "sync-update", syncDelete = "sync-delete"
    case sign, decrypt, keyExchange = "key-exchange"
    /// The first line of a log file after a rotation; its detail names the previous file.
    case rotated
    case syncRemove = "sync-remove", syncHistory = "sync-history"
    case syncSet = "sync-set", syncRestore = "sync-restore"

    /// The counted line of opens, reads and key uses repeated within a second.
    public var repeated: String { rawValue + "-repeated" }
    /// The line that follows an audited change that then failed.
    public var failed: String { rawValue + "-failed" }

    /// Whether `name` is a name the log can hold: an event, or its `-repeated` or `-failed` form.
    public static func isRecorded(_ name: String) -> Bool {
        allCases.contains { name == $0.rawValue || name == $0.repeated || name == $0.failed }
    }
}
