import KeychainCore
import KeychainCrypto
import KeychainSystem
import Synchronization

/// Fleet sync for one vault (docs/sync.md): the circle verbs, and rounds of pull then push
/// that the daemon runs on a thread of its own while the vault is unlocked. Everything runs
/// under one mutex; a round holds it, so a verb waits for the round in progress.
public final class SyncEngine: Sendable {
    /// What a round did to the vault: `kind` is `add`/`update` or `delete`.
    public typealias Applied = @Sendable (_ kind: ChangeKind, _ change: SyncApplied) -> Void

    /// The circle's state, keys and server connections (libpq's, which no two threads may use
    /// at once), reached only with the lock held.
    private let session: Mutex<SyncSession>

    /// - Parameters:
    ///   - connections: how rounds reach the server; `held` keeps this engine's own two.
    ///   - wake: what runs a round soon, for `connections`' waker to call on a notification.
    public init(vault: Vault, log: @escaping @Sendable (String) -> Void, onApplied: @escaping Applied,
                connections: SyncConnections = .held, wake: @escaping @Sendable () -> Void = {}) {
        session = Mutex(SyncSession(vault: vault, log: log, onApplied: onApplied, connections: connections, wake: wake))
    }

    /// Entries a long read (a new host's first sync) checks and writes in one vault
    /// transaction (docs/sync.md, "A new host"); tests make it smaller to reach the batch
    /// opened ahead with few entries.
    public static let longReadBatch = Atomic<Int>(16_384)

    /// The page cache of the vault's write connection during a long read, in MiB (8 otherwise):
    /// at a million items the indexes' pages (about 200 MiB) stay in memory for the read,
    /// which gives the memory back at its end (docs/sync.md, "A new host").
    public static let longReadCacheMiB = Atomic<Int>(256)

    /// The socket to wait on for the server's notifications; nil when not listening here
    /// (shared connections: the waker wakes this engine).
    public var notificationSocket: Int32? { session.withLock { $0.notificationSocket } }

    /// Gives back or closes this engine's connections and stops its wake-ups (a loop that ends).
    public func disconnect() { session.withLock { $0.disconnectLocked() } }

    /// One round: a joining host looks for its grant; a member pulls what others wrote, pushes
    /// its own changes, and pulls again after a lost compare-and-swap. Server failures are
    /// kept for `status` and retried on the next round. Does nothing before the first unlock.
    public func step() { session.withLock { s in defer { s.releaseLocked() }; s.step() } }

    /// Makes this host the first member of a new circle on the server, creating the tables
    /// when missing. - Throws: `KeychainStatus.param` for a connection string with a password
    /// or when already in a circle, `SyncError.server` when the server cannot be reached.
    public func initCircle(conninfo: String, name: String, pollMilliseconds: Int = 0) throws -> Fields {
        try session.withLock { s in
            defer { s.releaseLocked() }
            return try s.initCircle(conninfo: conninfo, name: name, pollMilliseconds: pollMilliseconds)
        }
    }

    /// Asks to join the circle on the server. - Returns: the code to type on a member
    /// (`sync approve CODE`); this host becomes a member once one does.
    public func join(conninfo: String, name: String, pollMilliseconds: Int = 0) throws -> String {
        try session.withLock { s in
            defer { s.releaseLocked() }
            return try s.join(conninfo: conninfo, name: name, pollMilliseconds: pollMilliseconds)
        }
    }

    /// On a member: finds the pending join whose code this is, endorses the new host's keys
    /// and seals the circle's keys to it. - Returns: the new host's name.
    /// - Throws: `KeychainStatus.param` for a code that is not one, `SyncError.noSuchJoin`.
    public func approve(code typed: String) throws -> String {
        try session.withLock { s in defer { s.releaseLocked() }; return try s.approve(code: typed) }
    }

    /// Removes another member: a new epoch whose circle key is sealed to the remaining members
    /// only, so the removed host can open nothing written after (its old keys read only what
    /// came before). `match` is a member's name or at least 8 hex digits of its id.
    /// - Returns: the removed host's name (or id). - Throws: `SyncError.noSuchMember`,
    ///   `SyncError.circleChanged` when another member started an epoch first.
    public func remove(host match: String) throws -> String {
        try session.withLock { s in defer { s.releaseLocked() }; return try s.remove(host: match) }
    }

    /// Leaves the circle: this host's entry is removed from the server (when reachable), and
    /// its keys and sync state from the vault. Its items stay, as ordinary local items.
    public func leave() throws {
        try session.withLock { s in defer { s.releaseLocked() }; return try s.leave() }
    }

    /// What `sync status` shows. Names no key, item or secret.
    public func status() -> Fields { session.withLock { $0.status() } }

    /// Sets how many days a member may go unseen before pruning leaves it out (`sync set
    /// --retention`), on the server's circle row: every member prunes by the same rule.
    /// - Throws: `SyncError.notMember`, `SyncError.server`.
    public func setRetention(days: Int) throws {
        try session.withLock { s in defer { s.releaseLocked() }; try s.setRetention(days: days) }
    }

    /// Sets the milliseconds between this host's rounds when it does not LISTEN (`sync set
    /// --poll`; 0: it listens). Kept in the vault; the next round follows it.
    /// - Throws: `SyncError.notMember` outside a circle.
    public func setPoll(milliseconds: Int) throws {
        try session.withLock { s in try s.setPoll(milliseconds: milliseconds) }
    }

    /// How long the loop waits for a kick or a notification before its next round, in ms.
    var roundInterval: Int32 {
        session.withLock { s in
            let poll = Int32(clamping: s.config?.pollMilliseconds ?? 0)
            return poll > 0 ? poll : SyncLoop.idleRound
        }
    }

    /// Writes `status`'s counters to the vault now (the daemon stopping); otherwise a round
    /// writes them at most every 30 s.
    public func saveCounters() { session.withLock { $0.saveCountersLocked(force: true) } }
}

/// What `SyncEngine`'s lock guards, and the work done with it held: the circle's state and
/// keys as loaded from the vault, the server connections, the counters `status` shows.
final class SyncSession {
    let vault: Vault
    let log: @Sendable (String) -> Void
    let onApplied: SyncEngine.Applied

    var config: SyncConfig?
    var host: HostKeys?
    var circle: CircleKeys?
    var joinKey: SecureBytes?
    let connections: SyncConnections
    let wake: @Sendable () -> Void
    /// This engine's name with the waker.
    let wakerID = SyncWaker.newID()
    /// The connection of the round in progress (borrowed from the pool), or held between rounds.
    var server: SyncServer?
    var listener: PGConnection?
    /// Whether the last round or verb reached the server.
    var reached = false
    /// What `status` counts; kept in the vault (`SyncCounters`) as of `savedCounters`.
    var counters: SyncCounters
    var savedCounters: SyncCounters
    var savedAt: ContinuousClock.Instant?
    /// The circle's retention as the last round (or `sync set`) saw it on the server.
    var retentionDays: Int?

    init(vault: Vault, log: @escaping @Sendable (String) -> Void, onApplied: @escaping SyncEngine.Applied,
         connections: SyncConnections, wake: @escaping @Sendable () -> Void) {
        self.vault = vault
        self.log = log
        self.onApplied = onApplied
        self.connections = connections
        self.wake = wake
        counters = SyncCounters.load(vault)
        savedCounters = counters
    }

    var notificationSocket: Int32? { listener.map(\.socket) }

    // MARK: A round

    func step() {
        // Locked, the keys of fleet sync (AfterFirstUnlock) stay: changes to items whose key
        // is gone wait in the vault (`drainQueueLocked`), the others apply.
        guard vault.lockState != .neverUnlocked, loadLocked(), var config else { return }
        defer { saveCountersLocked(force: false) }
        do {
            if config.state == .member, vault.lockState == .unlocked, let circle {
                // Before the server: what waited for the unlock applies with the server gone too.
                try drainQueueLocked(self.server?.db.isOK == true ? self.server : nil, circle: circle, config: &config)
                try config.save(vault)
                self.config = config
            }
            let server = try connectedLocked(config)
            reached = true
            if config.state == .joining {
                try finishJoinLocked(server)
                return
            }
            try listenLocked(config)
            try pullLocked(server)
            if try pushLocked(server) { try pullLocked(server) }
            pruneLocked(server)
            counters.lastError = nil
        } catch let e as PostgresError {
            counters.lastError = e.message
            dropServerLocked()
            listener = nil
            reached = false
        } catch {
            counters.lastError = "\(error)"
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
        if let server, server.db.isOK, server.conninfo == config.conninfo { return server }
        dropServerLocked()
        server = try openServerLocked(config.conninfo)
        return server!
    }

    /// A connection to `conninfo`: borrowed from the pool, or a new one to hold.
    func openServerLocked(_ conninfo: String) throws -> SyncServer {
        if let pool = connections.pool { return try pool.borrow(conninfo) }
        let s = try SyncServer(conninfo: conninfo)
        try s.upgradeSchema()
        return s
    }

    /// After a server error: the connection is closed, the next round makes a new one (to
    /// the standby that took over, say).
    func dropServerLocked() {
        if let server, let pool = connections.pool { pool.discard(server) }
        server = nil
    }

    /// At the end of a round or verb: a borrowed connection goes back to the pool.
    func releaseLocked() {
        guard let server, let pool = connections.pool else { return }
        // A host that polls less often than the pool keeps a connection closes it now: its
        // next round is further away than the pool would keep it.
        if let poll = config?.pollMilliseconds, poll > 0, Double(poll) >= pool.idleSeconds * 1000 {
            pool.discard(server)
        } else {
            pool.giveBack(server)
        }
        self.server = nil
    }

    func disconnectLocked() {
        releaseLocked()
        server = nil
        listener = nil
        connections.waker?.forget(engine: wakerID)
    }

    /// Hears the circle's notifications: through the waker, or on a connection of its own
    /// whose socket the loop waits on (`notificationSocket`), read here each round.
    func listenLocked(_ config: SyncConfig) throws {
        let channel = SyncServer.channel(config.circleID)
        // Polling: no LISTEN anywhere (a pooler in transaction mode cannot carry one).
        if config.pollMilliseconds > 0 {
            connections.waker?.forget(engine: wakerID)
            listener = nil
            return
        }
        if let waker = connections.waker {
            waker.listen(conninfo: config.conninfo, channel: channel, engine: wakerID, wake: wake)
            return
        }
        if listener?.isOK != true {
            let l = try PGConnection(conninfo: config.conninfo)
            try l.exec("LISTEN \"\(channel)\"")
            listener = l
        }
        _ = try listener?.notifications()
    }

    // MARK: Pull

    func pullLocked(_ server: SyncServer) throws {
        guard var config, let circle, let host else { return }
        var epochs = try server.epochs(config.circleID, after: circle.epoch, for: host.hostID)
        // Items with an entry waiting: their later entries wait behind it, in order.
        var waiting = Set(try vault.queuedSyncEntries().map(\.token))
        // Below the pruned position, tombstones this host never read are gone: it reads the
        // whole log (what is left of it) and then compares (`finishResyncLocked`). The cursor
        // saved stays where it was until the end, so a resync cut short starts over.
        var position = config.cursor
        var inLog: Set<[UInt8]>?
        if config.cursor < (try server.prunedPosition(config.circleID, host: host.hostID)) {
            guard vault.lockState == .unlocked else { return }  // the compare needs the items
            try server.holdPruning(config.circleID, host: host.hostID)
            inLog = []
            position = 0
            log("sync: the server pruned its log past this host's position \(config.cursor): full resync")
        }
        // A batch of entries, checked one by one, then written in one vault transaction.
        func take(_ entries: [SyncServer.LogEntry], openedAhead: OpenedAhead? = nil) throws {
            var states = SyncStates(vault: vault)
            // Nothing below writes sync states before the batch's one transaction: those of its
            // items can be read at once.
            if let openedAhead { try states.load(openedAhead.uuids) }
            var batch: [Opened] = []
            batch.reserveCapacity(entries.count)
            defer { for o in batch { o.payload?.wipe() } }
            func wait(_ e: SyncServer.LogEntry) throws {
                // Its class key is locked: the entry waits in the vault, as the ciphertext it
                // came as, and is applied at the next round after an unlock.
                try vault.queueSyncEntry(QueuedSyncEntry(seq: e.seq, token: e.token, version: e.version,
                                                         deleted: e.deleted, record: e.record))
                waiting.insert(e.token)
            }
            for e in entries {
                do {
                    // Never fetched (`entries`): rejected as what it is, not waiting for an unlock.
                    if e.length > SyncRecord.maximumLength { throw SyncError.tooLong(e.length) }
                    // Epochs begin at a place in the log: take those before this entry first,
                    // and look again when it names one not known (started since the round began).
                    if (try? SyncRecord.header(of: e.record).epoch).map({ $0 > circle.epoch }) == true {
                        epochs = try server.epochs(config.circleID, after: circle.epoch, for: host.hostID)
                    }
                    adoptEpochsLocked(&epochs, before: e.seq, circle: circle, host: host, config: &config)
                    if waiting.contains(e.token) { throw KeychainStatus.interactionNotAllowed }
                    if let o = try openEntry(e, server: server, circle: circle, states: &states, config: &config,
                                             openedAhead: openedAhead) { batch.append(o) }
                } catch let error as SyncError {
                    reject(e.seq, error)
                } catch KeychainStatus.interactionNotAllowed {
                    try wait(e)
                }
                inLog?.insert(e.token)
                position = e.seq
            }
            do {
                let applied = try vault.applySynced(batch.map(\.change), prepared: batch.map(\.prepared))
                for (o, a) in zip(batch, applied) { done(o, a) }
            } catch {
                // One of them cannot be written now (a locked class key, an item the vault
                // refuses): each on its own, as it would have been alone.
                for o in batch {
                    do {
                        if waiting.contains(o.entry.token) { throw KeychainStatus.interactionNotAllowed }
                        done(o, try applyOpened(o))
                    } catch let error as SyncError {
                        reject(o.entry.seq, error)
                    } catch KeychainStatus.interactionNotAllowed {
                        try wait(o.entry)
                    }
                }
            }
            if inLog == nil { config.cursor = position }
            try config.save(vault)
            self.config = config
        }
        while true {
            let entries = try server.entries(config.circleID, after: position)
            if entries.isEmpty { break }
            try take(entries)
            try server.setCursor(config.circleID, host: host.hostID, position)
            if entries.count == SyncServer.pageSize {
                // Far behind (a new member reads the whole log): the rest in one read, in
                // batches of thousands, each one vault transaction.
                var streamed = 0
                var ahead: OpenedAhead?  // the batch being opened on another thread
                let opener = try? SerialThread()  // that thread, one for the whole read
                defer { opener?.finish() }
                try vault.withLargeWriteCache(SyncEngine.longReadCacheMiB.load(ordering: .relaxed)) {
                    try server.streamEntries(config.circleID, after: position) { entries, next in
                        let opened = ahead
                        ahead = next.map { OpenedAhead($0, on: opener, circle: circle, config: config, vault: vault) }
                        streamed += entries.count
                        try take(entries, openedAhead: opened)
                    }
                }
                try server.setCursor(config.circleID, host: host.hostID, position)
                log("sync: read \(streamed) more log entries in one pass, up to log entry \(position)")
            }
        }
        if let inLog {
            try finishResyncLocked(inLog, waiting: waiting, server: server, circle: circle, host: host,
                                   circleID: config.circleID)
            config.cursor = position
            try config.save(vault)
            self.config = config
        }
        // Every entry before them is read: epochs begun since are in force.
        if !epochs.isEmpty {
            adoptEpochsLocked(&epochs, before: .max, circle: circle, host: host, config: &config)
            try config.save(vault)
            self.config = config
        }
    }

    /// Applies the entries that waited for an unlock, in log order; stops at one that still
    /// cannot be (locked again). Each is checked as when it came: a forged one is refused now.
    func drainQueueLocked(_ server: SyncServer?, circle: CircleKeys, config: inout SyncConfig) throws {
        let queued = try vault.queuedSyncEntries()
        guard !queued.isEmpty else { return }
        var states = SyncStates(vault: vault)
        for q in queued {
            let e = SyncServer.LogEntry(seq: q.seq, token: q.token, version: q.version, deleted: q.deleted, record: q.record,
                                        length: q.record.count)
            do {
                try apply(e, server: server, circle: circle, states: &states, config: &config)
            } catch let error as SyncError {
                reject(e.seq, error)
            } catch KeychainStatus.interactionNotAllowed {
                return
            } catch is PostgresError where server == nil {
                return  // a writer to look up on the server, which is not there: later
            }
            try vault.dropQueuedSyncEntry(q.seq)
        }
        log("sync: applied \(queued.count) changes that waited for the unlock")
    }

    func reject(_ seq: Int64, _ error: SyncError) {
        counters.rejected += 1
        counters.lastRejection = "log entry \(seq): \(error)"
        log("sync: rejected log entry \(seq): \(error)")
    }

    /// Takes the new circle keys of the epochs that began before log position `seq`: each
    /// signed by a member, sealed to this host; the member it removed becomes a former one.
    /// A share that does not check out is counted as a rejection and skipped.
    func adoptEpochsLocked(_ epochs: inout [EpochEntry], before seq: Int64, circle: CircleKeys, host: HostKeys,
                           config: inout SyncConfig) {
        while let p = epochs.first, p.seq < seq {
            epochs.removeFirst()
            guard p.epoch > circle.epoch else { continue }
            do {
                guard p.host == host.hostID, let signer = config.member(p.signer),
                      p.isSigned(circle: config.circleID, by: signer.signKey) else { throw SyncError.badSignature }
                let key = try host.openSealed(p.sealed)
                guard key.count == 32 else { key.wipe(); throw SyncError.malformed }
                circle.adopt(epoch: p.epoch, key: key)
                let secrets = try circle.secrets()
                defer { secrets.wipe() }
                try vault.setSyncSecret("circle", secrets)
                if let gone = config.member(p.removed) {
                    config.members.removeAll { $0.hostID == p.removed }
                    config.former.append(SyncConfig.Former(member: gone, until: p.seq))
                }
                config.epoch = p.epoch
                config.epochStart = p.seq
                log("sync: epoch \(p.epoch) began at log entry \(p.seq); host \(hex(p.removed).prefix(8)) removed")
            } catch {
                counters.rejected += 1
                counters.lastRejection = "epoch \(p.epoch): \(error)"
                log("sync: rejected epoch \(p.epoch): \(error)")
            }
        }
    }

    /// The sync state of the items a page touches: read from the vault one item at a time, and
    /// what the page already changed, so a page does not read every item's state.
    struct SyncStates {
        let vault: Vault
        var seen: [[UInt8]: SyncItemState?] = [:]

        mutating func state(_ uuid: [UInt8]) throws -> SyncItemState? {
            if let s = seen[uuid] { return s }
            let s = try vault.syncState(uuid)
            seen[uuid] = .some(s)
            return s
        }

        /// Reads the states of `uuids` not seen yet in one go (a batch's items, before any is
        /// written): what `state` would have read of each, one lock and statement for all.
        mutating func load(_ uuids: [[UInt8]]) throws {
            let unseen = uuids.filter { seen[$0] == nil }
            for (uuid, s) in zip(unseen, try vault.syncStates(unseen)) where seen[uuid] == nil { seen[uuid] = .some(s) }
        }
    }

    /// A log entry checked and opened, ready to be written.
    struct Opened {
        var entry: SyncServer.LogEntry
        var uuid: [UInt8]
        var payload: SyncPayload?
        /// Sealed for the vault ahead (`OpenedAhead`), or `.none`.
        var prepared: PreparedSync = .none

        var change: SyncChange {
            payload.map { .write($0, serverVersion: entry.version) } ?? .delete(uuid: uuid)
        }
    }

    private func apply(_ e: SyncServer.LogEntry, server: SyncServer?, circle: CircleKeys,
                       states: inout SyncStates, config: inout SyncConfig) throws {
        guard let o = try openEntry(e, server: server, circle: circle, states: &states, config: &config) else { return }
        defer { o.payload?.wipe() }
        done(o, try applyOpened(o))
    }

    /// Checks an entry (its row, epoch, writer, signature, both ciphertexts) and opens it.
    /// - Returns: nil when this host already has that version (its own write).
    private func openEntry(_ e: SyncServer.LogEntry, server: SyncServer?, circle: CircleKeys,
                           states: inout SyncStates, config: inout SyncConfig, openedAhead: OpenedAhead? = nil) throws -> Opened? {
        let header = try SyncRecord.header(of: e.record)
        guard header.token == e.token, header.version == e.version, header.deleted == e.deleted else {
            throw SyncError.mismatch
        }
        guard circle.key(for: header.epoch) != nil else { throw SyncError.unknownEpoch }
        // After an epoch began, only its key: the removed host knows the older ones.
        if e.seq > config.epochStart && header.epoch < config.epoch { throw SyncError.staleEpoch }
        if config.writer(header.writer, at: e.seq) == nil {
            guard let server else { throw PostgresError(message: "not connected", state: nil) }
            try refreshMembersLocked(server, &config)
        }
        guard let writer = config.writer(header.writer, at: e.seq) else { throw SyncError.unknownWriter }
        let ahead = openedAhead?.take(e.seq, signKey: writer.signKey, epoch: header.epoch)
        let (uuid, payload) = try ahead.map { ($0.uuid, $0.payload) }
            ?? SyncRecord.open(e.record, circle: circle, writerSigningKey: writer.signKey, expected: header)
        if let s = try states.state(uuid), s.serverVersion >= header.version {  // already here (our own write)
            payload?.wipe()
            return nil
        }
        states.seen[uuid] = payload == nil ? .some(nil) : SyncItemState(localVersion: 0, serverVersion: header.version)
        return Opened(entry: e, uuid: uuid, payload: payload, prepared: ahead?.prepared ?? .none)
    }

    private func applyOpened(_ o: Opened) throws -> SyncApplied? {
        do { return try vault.applySynced([o.change])[0] }
        catch KeychainStatus.decode { throw SyncError.malformed }
    }

    private func done(_ o: Opened, _ applied: SyncApplied?) {
        counters.pulled += 1
        if let applied { onApplied(o.payload == nil ? .delete : .update, applied) }
    }

    /// Learns members approved elsewhere: an entry counts once a member already trusted here
    /// signed it. The server can hide members, never add one.
    func refreshMembersLocked(_ server: SyncServer, _ config: inout SyncConfig) throws {
        var listed = try server.members(config.circleID)
        var learned = true
        while learned {
            learned = false
            for (i, m) in listed.enumerated().reversed() {
                if config.member(m.hostID) != nil || config.former.contains(where: { $0.member.hostID == m.hostID }) {
                    listed.remove(at: i)
                    continue
                }
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
        let (changed, gone) = try vault.syncChanges()
        var lost = false
        // What was sent is recorded in batches, one commit to disk for many. A crash before a
        // batch is written sends those items again: the server refuses them (their version is
        // taken) and the round pulls them back as they are.
        var sent: [(uuid: [UInt8], state: SyncItemState?)] = []
        defer { if !sent.isEmpty { try? vault.setSyncStates(sent) } }
        func record(_ uuid: [UInt8], _ state: SyncItemState?) throws {
            sent.append((uuid, state))
            counters.pushed += 1
            if sent.count >= 256 {
                try vault.setSyncStates(sent)
                sent = []
            }
        }
        // Sealed versions go to the server in transactions of up to 128.
        var outgoing: [(uuid: [UInt8], state: SyncItemState?, write: SyncServer.Write)] = []
        // Changes to items the server has no row of (a tombstone refused here, pruned since),
        // by local version: sent again as new items, as a full resync sends them.
        var asNew: [(uuid: [UInt8], localVersion: Int64)] = []
        func flush() throws {
            let placed = try server.write(config.circleID, outgoing.map(\.write))
            for (o, result) in zip(outgoing, placed) {
                switch result {
                case .at: try record(o.uuid, o.state)
                case .lost: lost = true
                case .gone:
                    // A delete of what the server no longer has is everywhere already.
                    if let state = o.state { asNew.append((o.uuid, state.localVersion)) } else { try record(o.uuid, nil) }
                }
            }
            outgoing = []
        }
        func queue(_ payload: SyncPayload?, _ uuid: [UInt8], expected: Int64, _ state: SyncItemState?) throws {
            let record = try SyncRecord.seal(payload, uuid: uuid, version: expected + 1, circle: circle, writer: host)
            let header = try SyncRecord.header(of: record)
            outgoing.append((uuid, state, SyncServer.Write(token: header.token, expected: expected, header: header, record: record)))
            if outgoing.count >= 128 { try flush() }
        }
        for (uuid, version, state) in changed {
            let payload: SyncPayload?
            do { payload = try vault.syncPayload(uuid: uuid) }
            catch KeychainStatus.interactionNotAllowed { continue }   // its class key is locked
            catch KeychainStatus.decode { continue }                  // damaged here: nothing to send
            guard let payload else { continue }
            defer { payload.wipe() }
            let expected = state?.serverVersion ?? 0
            try queue(payload, uuid, expected: expected, SyncItemState(localVersion: version, serverVersion: expected + 1))
        }
        for (uuid, s) in gone {
            try queue(nil, uuid, expected: s.serverVersion, nil)
        }
        if !outgoing.isEmpty { try flush() }
        if !asNew.isEmpty {
            log("sync: \(asNew.count) changed item(s) had no row on the server (a tombstone not applied here, pruned since): sent as new items")
            // A new item's insert is placed or lost, never gone: this runs once.
            for (uuid, localVersion) in asNew {
                guard let payload = try? vault.syncPayload(uuid: uuid) else { continue }
                defer { payload.wipe() }
                try queue(payload, uuid, expected: 0, SyncItemState(localVersion: localVersion, serverVersion: 1))
            }
            asNew = []
            if !outgoing.isEmpty { try flush() }
        }
        if !sent.isEmpty {
            try vault.setSyncStates(sent)
            sent = []
        }
        try vault.pruneSyncChanges()
        if lost { counters.conflicts += 1 }
        return lost
    }
}
