import KeychainCore

/// The end of a full resync and the pruning of the server's log (docs/sync.md, "Pruning").
extension SyncSession {
    /// After the whole log was read: an item this host exchanged whose token the log no longer
    /// holds was deleted elsewhere, its tombstone pruned. It is deleted here only when unchanged
    /// since it was exchanged; a change not yet sent keeps it, with a copy in its history, and
    /// it is sent again. Items with entries waiting for an unlock are left for those entries.
    /// A host the server no longer lists (removed) cannot read the tombstones of the epochs
    /// after its removal: it deletes nothing.
    func finishResyncLocked(_ inLog: Set<[UInt8]>, waiting: Set<[UInt8]>, server: SyncServer, circle: CircleKeys,
                            host: HostKeys, circleID: [UInt8]) throws {
        guard try server.members(circleID).contains(where: { $0.hostID == host.hostID }) else {
            log("sync: full resync done; this host is not a member any more: nothing deleted")
            return
        }
        var deleted = 0, kept = 0
        for uuid in try vault.exchangedSyncItems() {
            let token = circle.token(of: uuid)
            guard !inLog.contains(token), !waiting.contains(token) else { continue }
            let outcome = try vault.resolveMissedDelete(uuid: uuid)
            if let applied = outcome.deleted {
                deleted += 1
                onApplied(.delete, applied)
            }
            if outcome.kept { kept += 1 }
        }
        log("sync: full resync done: \(deleted) deleted as the log says, \(kept) changed here kept and sent again")
    }

    /// Sets the circle's retention on the server (`sync set --retention`): every member prunes
    /// by it. - Throws: `SyncError.notMember`, `SyncError.server`.
    func setRetention(days: Int) throws {
        guard loadLocked(), let config, config.state == .member else { throw SyncError.notMember }
        do {
            try connectedLocked(config).setRetentionDays(config.circleID, days)
        } catch let e as PostgresError {
            throw SyncError.server(e.message)
        }
        retentionDays = days
        log("sync: retention set to \(days) days")
    }

    /// Sets this host's polling (`sync set --poll`), kept in its sync state in the vault.
    /// - Throws: `SyncError.notMember` outside a circle.
    func setPoll(milliseconds: Int) throws {
        guard loadLocked(), var config, config.state == .member else { throw SyncError.notMember }
        config.pollMilliseconds = UInt32(clamping: milliseconds)
        try config.save(vault)
        self.config = config
        log(milliseconds > 0 ? "sync: rounds every \(milliseconds) ms, without LISTEN" : "sync: rounds on the server's notifications")
    }

    /// Any member prunes at the end of its round; cheap when nothing moved (one query).
    /// A failure is logged and left for the next round: pruning only saves space.
    func pruneLocked(_ server: SyncServer) {
        guard let config, config.state == .member else { return }
        do {
            let pruned = try server.prune(config.circleID)
            retentionDays = pruned.retentionDays
            if pruned.log + pruned.tombstones > 0 {
                log("sync: pruned \(pruned.log) log entries and \(pruned.tombstones) tombstones from the server")
            }
        } catch {
            log("sync: pruning the server's log failed: \(error)")
        }
    }
}
