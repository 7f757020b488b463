import KeychainSystem

/// Per-uid accounting of connections, pending bytes and slow requests, checked against
/// `ServerLimits`. Privileged callers are counted (for `status`) but never refused.
final class Quotas: Sendable {
    private struct Usage {
        var connections = 0
        var pendingBytes = 0
        var slowRequests = 0
        var isEmpty: Bool { connections == 0 && pendingBytes == 0 && slowRequests == 0 }
    }

    private struct Totals {
        var perUID: [UInt32: Usage] = [:]
        var connectionsOfOthers = 0
        var bytesOfOthers = 0
    }

    let limits: ServerLimits
    private let totals = Locked(Totals())

    init(limits: ServerLimits) { self.limits = limits }

    /// Admits a new connection of `uid`, or refuses it when the uid or all others are at their cap.
    func admitConnection(uid: UInt32) -> Bool {
        let privileged = limits.isPrivileged(uid: uid)
        return totals.withLock { t in
            var u = t.perUID[uid] ?? Usage()
            if !privileged {
                guard u.connections < limits.connectionsPerUID, t.connectionsOfOthers < limits.connectionsOfOthers else { return false }
                t.connectionsOfOthers += 1
            }
            u.connections += 1
            t.perUID[uid] = u
            return true
        }
    }

    func releaseConnection(uid: UInt32) {
        let privileged = limits.isPrivileged(uid: uid)
        totals.withLock { t in
            guard var u = t.perUID[uid] else { return }
            u.connections -= 1
            if !privileged { t.connectionsOfOthers -= 1 }
            t.perUID[uid] = u.isEmpty ? nil : u
        }
    }

    /// Charges `bytes` more of guarded memory held for `uid`; false when that would pass a cap.
    func charge(bytes: Int, uid: UInt32) -> Bool {
        let privileged = limits.isPrivileged(uid: uid)
        return totals.withLock { t in
            var u = t.perUID[uid] ?? Usage()
            if !privileged {
                guard u.pendingBytes + bytes <= limits.pendingBytesPerUID,
                      t.bytesOfOthers + bytes <= limits.pendingBytesOfOthers else { return false }
                t.bytesOfOthers += bytes
            }
            u.pendingBytes += bytes
            t.perUID[uid] = u
            return true
        }
    }

    func refund(bytes: Int, uid: UInt32) {
        guard bytes > 0 else { return }
        let privileged = limits.isPrivileged(uid: uid)
        totals.withLock { t in
            guard var u = t.perUID[uid] else { return }
            u.pendingBytes -= bytes
            if !privileged { t.bytesOfOthers -= bytes }
            t.perUID[uid] = u.isEmpty ? nil : u
        }
    }

    /// Admits one more slow request of `uid` (queued or running).
    func admitSlow(uid: UInt32) -> Bool {
        let privileged = limits.isPrivileged(uid: uid)
        return totals.withLock { t in
            var u = t.perUID[uid] ?? Usage()
            guard privileged || u.slowRequests < limits.slowRequestsPerUID else { return false }
            u.slowRequests += 1
            t.perUID[uid] = u
            return true
        }
    }

    func releaseSlow(uid: UInt32) {
        totals.withLock { t in
            guard var u = t.perUID[uid] else { return }
            u.slowRequests -= 1
            t.perUID[uid] = u.isEmpty ? nil : u
        }
    }

    /// Open connections of one uid (for tests and `status`).
    func connections(uid: UInt32) -> Int { totals.withLock { $0.perUID[uid]?.connections ?? 0 } }
}
