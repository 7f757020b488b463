import KeychainCore
import KeychainCrypto

/// Fleet sync for one vault (docs/sync.md): the circle verbs, and rounds of pull then push
/// that the daemon runs on a thread of its own while the vault is unlocked. Everything runs
/// under one mutex; a round holds it, so a verb waits for the round in progress.
public final class SyncEngine: @unchecked Sendable {
    /// What a round did to the vault: `kind` is `add`/`update` or `delete`.
    public typealias Applied = @Sendable (_ kind: ChangeKind, _ change: SyncApplied) -> Void

    let vault: Vault
    let log: @Sendable (String) -> Void
    let onApplied: Applied
    let mutex = PThreadMutex()

    // State, with the mutex held.
    var config: SyncConfig?
    var host: HostKeys?
    var circle: CircleKeys?
    var joinKey: SecureBytes?
    var server: SyncServer?
    var listener: PGConnection?
    var counters = Counters()

    struct Counters {
        var pushed = 0, pulled = 0, rejected = 0, conflicts = 0
        var lastRejection: String?
        var lastError: String?
    }

    public init(vault: Vault, log: @escaping @Sendable (String) -> Void, onApplied: @escaping Applied) {
        self.vault = vault
        self.log = log
        self.onApplied = onApplied
    }

    /// The socket to wait on for the server's notifications; nil when not listening.
    public var notificationSocket: Int32? {
        mutex.withLock { listener.map(\.socket) }
    }

    // MARK: A round

    /// One round: a joining host looks for its grant; a member pulls what others wrote, pushes
    /// its own changes, and pulls again after a lost compare-and-swap. Server failures are
    /// kept for `status` and retried on the next round. Does nothing unless unlocked.
    public func step() {
        mutex.withLock {
            guard vault.lockState == .unlocked, loadLocked(), let config else { return }
            do {
                let server = try connectedLocked(config)
                if config.state == .joining {
                    try finishJoinLocked(server)
                    return
                }
                _ = try listenerLocked(config).notifications()
                try pullLocked(server)
                if try pushLocked(server) { try pullLocked(server) }
                counters.lastError = nil
            } catch let e as PostgresError {
                counters.lastError = e.message
                self.server = nil
                listener = nil
            } catch {
                counters.lastError = "\(error)"
            }
        }
    }

    /// Loads the circle's state and keys from the vault when not yet in memory.
    func loadLocked() -> Bool {
        if config == nil { config = (try? SyncConfig.load(vault)) ?? nil }
        guard let config else { return false }
        do {
            if host == nil, let s = try vault.syncSecret("host") {
                defer { s.wipe() }
                host = try HostKeys.parse(s)
            }
            if config.state == .member, circle == nil, let s = try vault.syncSecret("circle") {
                defer { s.wipe() }
                circle = try CircleKeys.parse(circleID: config.circleID, epoch: config.epoch, secrets: s)
            }
            if config.state == .joining, joinKey == nil { joinKey = try vault.syncSecret("join") }
        } catch {
            counters.lastError = "cannot read this host's sync keys: \(error)"
            return false
        }
        return host != nil && (config.state == .joining ? joinKey != nil : circle != nil)
    }

    func connectedLocked(_ config: SyncConfig) throws -> SyncServer {
        if let server, server.db.isOK { return server }
        let s = try SyncServer(conninfo: config.conninfo)
        server = s
        return s
    }

    func listenerLocked(_ config: SyncConfig) throws -> PGConnection {
        if let listener, listener.isOK { return listener }
        let l = try PGConnection(conninfo: config.conninfo)
        try l.exec("LISTEN \"\(SyncServer.channel(config.circleID))\"")
        listener = l
        return l
    }

    // MARK: Pull

    func pullLocked(_ server: SyncServer) throws {
        guard var config, let circle else { return }
        while true {
            let entries = try server.entries(config.circleID, after: config.cursor)
            if entries.isEmpty { break }
            var states = try vault.syncStates()
            var stalled = false
            for e in entries {
                do {
                    try apply(e, server: server, circle: circle, states: &states, config: &config)
                } catch let error as SyncError {
                    counters.rejected += 1
                    counters.lastRejection = "log entry \(e.seq): \(error)"
                    log("sync: rejected log entry \(e.seq): \(error)")
                } catch KeychainStatus.interactionNotAllowed {
                    // A class key locked under us: stop here and take this entry again later.
                    stalled = true
                    break
                }
                config.cursor = e.seq
            }
            try config.save(vault)
            self.config = config
            if let host { try server.setCursor(config.circleID, host: host.hostID, config.cursor) }
            if stalled { break }
        }
    }

    private func apply(_ e: SyncServer.LogEntry, server: SyncServer, circle: CircleKeys,
                       states: inout [[UInt8]: SyncItemState], config: inout SyncConfig) throws {
        let header = try SyncRecord.header(of: e.record)
        guard header.token == e.token, header.version == e.version, header.deleted == e.deleted else {
            throw SyncError.mismatch
        }
        guard header.epoch == circle.epoch else { throw SyncError.unknownEpoch }
        if config.member(header.writer) == nil { try refreshMembersLocked(server, &config) }
        guard let writer = config.member(header.writer) else { throw SyncError.unknownWriter }
        let (uuid, payload) = try SyncRecord.open(e.record, circle: circle, writerSigningKey: writer.signKey, expected: header)
        defer { payload?.wipe() }
        if let s = states[uuid], s.serverVersion >= header.version { return }  // already here (our own write)
        let applied: SyncApplied?
        if let payload {
            do { applied = try vault.applySynced(payload, serverVersion: header.version) }
            catch KeychainStatus.decode { throw SyncError.malformed }
            states[uuid] = SyncItemState(localVersion: 0, serverVersion: header.version)
        } else {
            applied = try vault.deleteSynced(uuid: uuid)
            states[uuid] = nil
        }
        counters.pulled += 1
        if let applied { onApplied(payload == nil ? .delete : .update, applied) }
    }

    /// Learns members approved elsewhere: an entry counts once a member already trusted here
    /// signed it. The server can hide members, never add one.
    func refreshMembersLocked(_ server: SyncServer, _ config: inout SyncConfig) throws {
        var listed = try server.members(config.circleID)
        var learned = true
        while learned {
            learned = false
            for (i, m) in listed.enumerated().reversed() {
                if config.member(m.hostID) != nil { listed.remove(at: i); continue }
                guard let approver = config.member(m.approvedBy), m.signKey.count == 32, m.boxKey.count == 32,
                      m.isEndorsed(circle: config.circleID, by: approver.signKey) else { continue }
                config.members.append(SyncConfig.Member(hostID: m.hostID, signKey: m.signKey, boxKey: m.boxKey, name: ""))
                listed.remove(at: i)
                learned = true
            }
        }
        try config.save(vault)
        self.config = config
    }

    // MARK: Push

    /// Sends every synchronizable item changed since it was last exchanged, and a tombstone
    /// for each exchanged item that is gone (or stopped syncing). - Returns: whether a
    /// compare-and-swap was lost (another host wrote first; the caller pulls).
    func pushLocked(_ server: SyncServer) throws -> Bool {
        guard let config, let circle, let host else { return false }
        let items = try vault.synchronizableItems()
        let states = try vault.syncStates()
        var lost = false
        for (uuid, version) in items where states[uuid]?.localVersion != version {
            let payload: SyncPayload?
            do { payload = try vault.syncPayload(uuid: uuid) }
            catch KeychainStatus.interactionNotAllowed { continue }   // its class key is locked
            catch KeychainStatus.decode { continue }                  // damaged here: nothing to send
            guard let payload else { continue }
            defer { payload.wipe() }
            let expected = states[uuid]?.serverVersion ?? 0
            if try send(payload, uuid: uuid, version: expected + 1, expected: expected, server, config, circle, host) {
                try vault.setSyncState(uuid, SyncItemState(localVersion: version, serverVersion: expected + 1))
                counters.pushed += 1
            } else {
                lost = true
            }
        }
        let live = Set(items.map(\.uuid))
        for (uuid, s) in states where !live.contains(uuid) {
            if try send(nil, uuid: uuid, version: s.serverVersion + 1, expected: s.serverVersion, server, config, circle, host) {
                try vault.setSyncState(uuid, nil)
                counters.pushed += 1
            } else {
                lost = true
            }
        }
        if lost { counters.conflicts += 1 }
        return lost
    }

    private func send(_ payload: SyncPayload?, uuid: [UInt8], version: Int64, expected: Int64, _ server: SyncServer,
                      _ config: SyncConfig, _ circle: CircleKeys, _ host: HostKeys) throws -> Bool {
        let record = try SyncRecord.seal(payload, uuid: uuid, version: version, circle: circle, writer: host)
        let header = try SyncRecord.header(of: record)
        return try server.write(config.circleID, token: header.token, expected: expected, header: header, record: record) != nil
    }
}
