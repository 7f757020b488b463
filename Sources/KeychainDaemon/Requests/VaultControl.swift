import KeychainfsAccess
import KeychainCore
import KeychainFS
import KeychainProtocol

/// The daemon's own parts that the administration families reach (lock and unlock, settings,
/// mounts, groups, the audit log, backups, sync, stop): each member is one a handler uses.
protocol VaultControl: Sendable {
    var vaultPath: String { get }
    var ownerUID: UInt32 { get }
    var ownerGID: UInt32 { get }
    var auditLog: AuditLog? { get }
    var events: EventHub { get }
    var approvals: ApprovalAgent { get }
    var lockout: Lockout { get }
    var syncRunner: SyncRunner { get }
    var serviceClock: ServiceClock { get }

    func lockEverywhere(by caller: CallerIdentity?, trigger: String)
    /// Runs `body` alone among passphrase checks: each costs Argon2id's memory.
    func oneUnlockAtATime<R>(_ body: () throws -> R) throws -> R
    /// After a passphrase opened the vault: the idle clock restarts, a table the locked vault
    /// could not read is loaded, the audit log opens if it could not before.
    func didUnlock()
    func setIdleTimeout(_ seconds: Int)
    /// The idle lock's timeout and the seconds since the last entitled request.
    func idleTimeout() -> (timeout: Int, idle: Double)

    var groupTable: AccessGroupTable { get }
    /// Reads, changes and saves the group table, one change at a time, so none is lost.
    func changeGroupTable(_ change: (inout AccessGroupTable) throws -> Void) throws

    func currentMounts() -> [MountServer]
    /// Serves a new mount at `point` and records it to be brought back after a restart.
    /// - Throws: errSecDuplicateItem when `point` is served already.
    func serve(point: String, options: MountOptions, raw: String, device: Int32?, for caller: CallerIdentity) throws
    /// - Throws: errSecItemNotFound when nothing is served at `point`.
    func endMount(_ point: String) throws

    func exportBackup(_ request: ExportRequest, caller: CallerIdentity) throws -> ExportPiece
    func importBackup(_ request: ImportRequest, caller: CallerIdentity) throws -> ImportProgress
}

extension Daemon: VaultControl {
    var syncRunner: SyncRunner { sync }

    func oneUnlockAtATime<R>(_ body: () throws -> R) throws -> R { try unlockSerializer.withLock { _ in try body() } }

    func didUnlock() {
        state.withLock {
            $0.lastActivity = monotonicSeconds()
            if $0.groupTable.groups.isEmpty, let t = try? AccessGroupTable.load(from: vault) { $0.groupTable = t }
        }
        openAuditLog()
    }

    func setIdleTimeout(_ seconds: Int) {
        state.withLock { $0.idleTimeout = seconds; $0.lastActivity = monotonicSeconds() }
    }

    func idleTimeout() -> (timeout: Int, idle: Double) {
        state.withLock { ($0.idleTimeout, monotonicSeconds() - $0.lastActivity) }
    }

    var groupTable: AccessGroupTable { state.withLock { $0.groupTable } }

    func changeGroupTable(_ change: (inout AccessGroupTable) throws -> Void) throws {
        // Read, changed and saved under the state's lock, so two changes cannot lose one.
        try groupChanges.withLock { _ in try state.withLock { s in
            var table = s.groupTable
            try change(&table)
            try table.save(to: vault)
            s.groupTable = table
        } }
    }

    func currentMounts() -> [MountServer] { state.withLock { $0.mounts.filter { !$0.hasEnded } } }

    func serve(point: String, options: MountOptions, raw: String, device: Int32?, for caller: CallerIdentity) throws {
        // Mounts that umount(8) ended are forgotten first.
        let taken = state.withLock { s in
            s.mounts.removeAll { $0.hasEnded }
            return s.mounts.contains { $0.mountpoint == point }
        }
        guard !taken else { throw KeychainStatus.duplicateItem }
        let server = MountServer(mountpoint: point, options: options, vault: vault, policy: self)
        try server.start(device: device)
        state.withLock { $0.mounts.append(server) }
        recordMount(MountRecord(mountpoint: point, options: raw, uid: caller.uid))
    }

    func endMount(_ point: String) throws {
        guard let server = state.withLock({ s -> MountServer? in
            guard let i = s.mounts.firstIndex(where: { $0.mountpoint == point }) else { return nil }
            return s.mounts.remove(at: i)
        }) else { throw KeychainStatus.itemNotFound }
        server.unmount()
        forgetMount(point)
    }
}
