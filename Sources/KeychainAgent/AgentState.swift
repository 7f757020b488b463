import KeychainCrypto
import KeychainSystem

/// What the agent's clients change for every other client: keys taken off the list
/// (`ssh-add -d`, `-D`) and the agent's own lock (`ssh-add -x`, `-X`).
final class AgentState: Sendable {
    private struct State {
        /// Key blobs removed from the agent's list; the keys stay in the vault.
        var removed: Set<[UInt8]> = []
        /// The lock passphrase while locked, in guarded memory.
        var passphrase: SecureBytes?
        var failedUnlocks = 0
    }

    private let state = Locked(State())

    var isLocked: Bool { state.withLock { $0.passphrase != nil } }

    /// Locks the agent with `passphrase` (kept); false when it is locked already.
    func lock(_ passphrase: SecureBytes) -> Bool {
        state.withLock { s in
            guard s.passphrase == nil else { return false }
            s.passphrase = passphrase
            s.failedUnlocks = 0
            return true
        }
    }

    /// Unlocks when `passphrase` is the one it was locked with. A wrong one waits a little
    /// longer each time (0.1 s more, up to 10 s), as OpenSSH's agent does, so guessing is slow.
    func unlock(_ passphrase: SecureBytes) -> Bool {
        let failures: Int? = state.withLock { s in
            guard let kept = s.passphrase else { return 0 }
            if kept.constantTimeEquals(passphrase) {
                kept.wipe()
                s.passphrase = nil
                s.failedUnlocks = 0
                return nil
            }
            s.failedUnlocks += 1
            return s.failedUnlocks
        }
        guard let failures else { return true }
        if failures > 0 { SystemClock.sleep(microseconds: UInt32(min(failures, 100)) * 100_000) }
        return false
    }

    func remove(_ blob: [UInt8]) { state.withLock { _ = $0.removed.insert(blob) } }

    func restore(_ blob: [UInt8]) { state.withLock { _ = $0.removed.remove(blob) } }

    /// The identities not removed from the list.
    func offered(_ identities: [VaultIdentity]) -> [VaultIdentity] {
        let removed = state.withLock { $0.removed }
        return removed.isEmpty ? identities : identities.filter { !removed.contains($0.key.blob) }
    }
}
