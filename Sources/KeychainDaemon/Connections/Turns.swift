import KeychainSystem

/// One request at a time on the event threads for each uid other than the vault's owner and
/// root. A uid that runs many busy clients then holds one event thread at most, never all of
/// them, so an owner's or root's request (or another uid's) waits behind at most one of its
/// requests (PRODUCT 11: the owner and root are never starved by another uid). A connection
/// whose uid is mid-turn waits here disarmed, costing no thread; when the turn ends, the next
/// one is re-armed, so any event thread takes it up in epoll's order with everyone else's.
final class Turns: Sendable {
    private struct Turn {
        /// The waiting connection that was handed the turn and has not started it yet.
        var handed: UInt64?
        var waiting: [Connection] = []
    }

    private let turns = Locked<[UInt32: Turn]>([:])

    /// True when `connection` may be served now; false when it waits for its uid's turn.
    func begin(_ connection: Connection) -> Bool {
        turns.withLock { t in
            let uid = connection.caller.uid
            guard var turn = t[uid] else {
                t[uid] = Turn()
                return true
            }
            if turn.handed == connection.id {
                turn.handed = nil
                t[uid] = turn
                return true
            }
            turn.waiting.append(connection)
            t[uid] = turn
            return false
        }
    }

    /// Ends the uid's turn. Returns the connection that has it next, to be re-armed, or nil.
    func end(uid: UInt32) -> Connection? {
        turns.withLock { t in
            guard var turn = t[uid] else { return nil }
            guard !turn.waiting.isEmpty else {
                t[uid] = nil
                return nil
            }
            let next = turn.waiting.removeFirst()
            turn.handed = next.id
            t[uid] = turn
            return next
        }
    }
}
