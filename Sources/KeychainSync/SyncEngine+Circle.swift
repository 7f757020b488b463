import KeychainCore
import KeychainCrypto

/// The circle verbs: init, join, approve, leave, status (docs/sync.md, "The circle").
extension SyncSession {
    func initCircle(conninfo: String, name: String, pollMilliseconds: Int) throws -> Fields {
        try checkNewLocked(conninfo)
        let server = try reach(conninfo)
        try server.createSchema()
        let host = try HostKeys.generate(), circle = try CircleKeys.generate()
        let founder = try MemberEntry.endorse(circle: circle.circleID, host: host.hostID, signKey: host.signPublic,
                                              boxKey: host.boxPublic, by: host)
        try reachable { try server.createCircle(circle.circleID, founder: founder) }
        try storeSecret("host", host.serialized())
        try storeSecret("circle", circle.secrets())
        var config = SyncConfig(state: .member, conninfo: conninfo, name: name)
        config.pollMilliseconds = UInt32(clamping: pollMilliseconds)
        config.circleID = circle.circleID
        config.epoch = circle.epoch
        config.members = [SyncConfig.Member(hostID: host.hostID, signKey: host.signPublic, boxKey: host.boxPublic, name: name)]
        try config.save(vault)
        (self.config, self.host, self.circle, self.server) = (config, host, circle, server)
        log("sync: founded circle \(hex(circle.circleID).prefix(8))")
        return statusLocked()
    }

    func join(conninfo: String, name: String, pollMilliseconds: Int) throws -> String {
        try checkNewLocked(conninfo)
        let server = try reach(conninfo)
        try server.createSchema()
        let host = try HostKeys.generate()
        let code = JoinCode.generate()
        let key = try JoinCode.key(code: JoinCode.normalize(code)!, host: host.hostID)
        try reachable { try server.postJoin(host: host.hostID, request: JoinCode.request(host, name: name, key: key)) }
        try storeSecret("host", host.serialized())
        try vault.setSyncSecret("join", key)
        var config = SyncConfig(state: .joining, conninfo: conninfo, name: name)
        config.pollMilliseconds = UInt32(clamping: pollMilliseconds)
        try config.save(vault)
        (self.config, self.host, self.joinKey, self.server) = (config, host, key, server)
        log("sync: asked to join")
        return code
    }

    func approve(code typed: String) throws -> String {
        guard let code = JoinCode.normalize(typed) else { throw KeychainStatus.param }
        guard loadLocked(), var config, config.state == .member, let host, let circle else { throw SyncError.notMember }
        let server = try reachable { try connectedLocked(config) }
        for (candidate, request) in try reachable({ try server.pendingJoins() }) where candidate.count == 16 {
            let key = try JoinCode.key(code: code, host: candidate)
            defer { key.wipe() }
            guard let m = try? JoinCode.openRequest(request, host: candidate, key: key),
                  m.signKey.count == 32, m.boxKey.count == 32 else { continue }
            let secrets = try circle.secrets()
            defer { secrets.wipe() }
            let sealed = try SealedBox.seal(secrets, to: m.boxKey)
            let entry = try MemberEntry.endorse(circle: circle.circleID, host: m.hostID, signKey: m.signKey,
                                                boxKey: m.boxKey, by: host)
            try reachable { try server.addMember(circle.circleID, entry) }
            config.members.removeAll { $0.hostID == m.hostID }
            config.members.append(m)
            try config.save(vault)
            self.config = config
            let grant = JoinCode.grant(circle: circle, approver: host.hostID, sealedSecrets: sealed,
                                       members: config.members, epochStart: config.epochStart, former: config.former,
                                       host: m.hostID, key: key)
            try reachable { try server.grantJoin(host: m.hostID, grant: grant) }
            log("sync: approved host \(hex(m.hostID).prefix(8))")
            return m.name
        }
        throw SyncError.noSuchJoin
    }

    /// A joining host's half of the approval: opens the grant, checks it names this host's
    /// keys, and keeps the circle's keys.
    func finishJoinLocked(_ server: SyncServer) throws {
        guard var config, let host, let joinKey, let box = try server.fetchGrant(host: host.hostID) else { return }
        let grant: JoinCode.Grant
        do {
            grant = try JoinCode.openGrant(box, host: host.hostID, key: joinKey)
            guard let me = grant.members.first(where: { $0.hostID == host.hostID }),
                  me.signKey == host.signPublic, me.boxKey == host.boxPublic else { throw SyncError.mismatch }
        } catch {
            counters.rejected += 1
            counters.lastRejection = "join grant: \(error)"
            return
        }
        let secrets = try host.openSealed(grant.sealedSecrets)
        defer { secrets.wipe() }
        let circle = try CircleKeys.parse(circleID: grant.circleID, epoch: grant.epoch, secrets: secrets)
        try storeSecret("circle", circle.secrets())
        config.state = .member
        config.circleID = grant.circleID
        config.epoch = grant.epoch
        config.cursor = 0
        config.members = grant.members
        config.epochStart = grant.epochStart
        config.former = grant.former
        try config.save(vault)
        try vault.setSyncSecret("join", nil)
        try server.removeJoin(host: host.hostID)
        joinKey.wipe()
        (self.config, self.circle, self.joinKey) = (config, circle, nil)
        log("sync: joined circle \(hex(grant.circleID).prefix(8))")
    }

    func remove(host match: String) throws -> String {
        guard loadLocked(), config?.state == .member, let host, let circle else { throw SyncError.notMember }
        let server = try reachable { try connectedLocked(config!) }
        // The newest epoch and members first: what another member did comes in the pull.
        try reachable { try pullLocked(server) }
        guard var config = self.config else { throw SyncError.notMember }
        let lowered = match.lowercased()
        let matches = config.members.filter {
            $0.hostID != host.hostID && ($0.name == match || (lowered.count >= 8 && hex($0.hostID).hasPrefix(lowered)))
        }
        guard matches.count == 1, let gone = matches.first else { throw SyncError.noSuchMember }
        let epoch = circle.epoch + 1
        let key = try SecureBytes.random(count: 32)
        var shares: [EpochEntry] = []
        do {
            for m in config.members where m.hostID != gone.hostID {
                let sealed = try SealedBox.seal(key, to: m.boxKey)
                let message = EpochEntry.message(circle: config.circleID, epoch: epoch, removed: gone.hostID,
                                                 host: m.hostID, sealed: sealed)
                shares.append(EpochEntry(epoch: epoch, host: m.hostID, seq: 0, removed: gone.hostID, sealed: sealed,
                                         signer: host.hostID, signature: try host.sign(message)))
            }
            let start = try reachable { try server.startEpoch(config.circleID, shares) }
            circle.adopt(epoch: epoch, key: key)
            config.members.removeAll { $0.hostID == gone.hostID }
            config.former.append(SyncConfig.Former(member: gone, until: start))
            config.epoch = epoch
            config.epochStart = start
        } catch {
            key.wipe()
            throw error
        }
        // The server keeps this host's share too: if what follows fails, a pull takes it back.
        try storeSecret("circle", circle.secrets())
        try config.save(vault)
        self.config = config
        log("sync: removed host \(hex(gone.hostID).prefix(8)); epoch \(epoch) began at log entry \(config.epochStart)")
        return gone.name.isEmpty ? hex(gone.hostID) : gone.name
    }

    func leave() throws {
        _ = loadLocked()
        guard let config else { throw SyncError.notMember }
        if config.state == .member, let host, let server = try? connectedLocked(config) {
            try? server.removeMember(config.circleID, host: host.hostID)
        } else if let host, let server = try? connectedLocked(config) {
            try? server.removeJoin(host: host.hostID)
        }
        for name in ["host", "circle", "join"] { try vault.setSyncSecret(name, nil) }
        try vault.clearSyncStates()
        try vault.dropQueuedSyncEntry(nil)
        try SyncConfig.remove(vault)
        host?.wipe()
        circle?.wipe()
        joinKey?.wipe()
        disconnectLocked()
        (self.config, host, circle, joinKey) = (nil, nil, nil, nil)
        counters = SyncCounters()
        retentionDays = nil
        saveCountersLocked(force: true)
        log("sync: left the circle")
    }

    func status() -> Fields {
        _ = loadLocked()
        return statusLocked()
    }

    func statusLocked() -> Fields {
        guard let config else { return ["state": .string("none")] }
        var out: Fields = [
            "state": .string(config.state == .member ? "member" : "joining"),
            "server": .string(config.conninfo),
            "name": .string(config.name),
            "pushed": .number(Int64(counters.pushed)),
            "pulled": .number(Int64(counters.pulled)),
            "rejected": .number(Int64(counters.rejected)),
            "conflicts": .number(Int64(counters.conflicts)),
            "connected": .bool(reached),
        ]
        if let host { out["host"] = .string(hex(host.hostID)) }
        if config.state == .member {
            out["circle"] = .string(hex(config.circleID))
            out["epoch"] = .number(Int64(config.epoch))
            out["cursor"] = .number(config.cursor)
            out["waiting"] = .number(Int64((try? vault.queuedSyncEntries().count) ?? 0))
            if let retentionDays { out["retention-days"] = .number(Int64(retentionDays)) }
            out["poll-ms"] = .number(Int64(config.pollMilliseconds))
            out["members"] = .string(config.members.map { hex($0.hostID).prefix(8) + ($0.name.isEmpty ? "" : " " + $0.name) }
                .joined(separator: ", "))
        }
        if let r = counters.lastRejection { out["last-rejection"] = .string(r) }
        if let e = counters.lastError { out["last-error"] = .string(e) }
        return out
    }

    // MARK: Helpers

    private func checkNewLocked(_ conninfo: String) throws {
        _ = loadLocked()
        guard config == nil else { throw KeychainStatus.param }
        // A password belongs in libpq's passfile, never in a request or the vault.
        guard (try? PGConnection.conninfoHasPassword(conninfo)) == false else { throw KeychainStatus.param }
    }

    private func reach(_ conninfo: String) throws -> SyncServer {
        dropServerLocked()
        let s = try reachable { try openServerLocked(conninfo) }
        server = s  // given back (or held) as any round's
        reached = true
        return s
    }

    /// Server failures as `SyncError.server`, with libpq's message.
    private func reachable<R>(_ body: () throws -> R) throws -> R {
        do { return try body() } catch let e as PostgresError { throw SyncError.server(e.message) }
    }

    private func storeSecret(_ name: String, _ value: SecureBytes) throws {
        defer { value.wipe() }
        try vault.setSyncSecret(name, value)
    }
}
