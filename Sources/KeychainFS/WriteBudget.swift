import KeychainCore
import Synchronization

/// The guarded (locked) memory that files open for writing hold, per uid and in total. A write
/// that would take a file's buffer past either bound fails with ENOSPC, so that no caller can
/// make a root daemon lock memory without end through sparse writes or many descriptors.
final class WriteBudget: Sendable {
    /// Two files of the largest size per uid.
    static let perUID = 2 * ItemLimits.maximumSecretLength
    /// All writers together.
    static let total = 8 * ItemLimits.maximumSecretLength

    private struct Charges {
        var byUID: [UInt32: Int] = [:]
        var all = 0
    }

    private let charges = Mutex(Charges())
    let perUIDLimit: Int
    let totalLimit: Int

    init(perUID: Int = WriteBudget.perUID, total: Int = WriteBudget.total) {
        perUIDLimit = perUID
        totalLimit = total
    }

    /// Takes `bytes` more for `uid`; false, taking nothing, past a bound.
    func charge(_ bytes: Int, uid: UInt32) -> Bool {
        charges.withLock { c in
            let mine = c.byUID[uid, default: 0]
            guard bytes <= 0 || (mine + bytes <= perUIDLimit && c.all + bytes <= totalLimit) else { return false }
            c.byUID[uid] = mine + bytes
            c.all += bytes
            if c.byUID[uid] == 0 { c.byUID[uid] = nil }
            return true
        }
    }

    func release(_ bytes: Int, uid: UInt32) {
        guard bytes > 0 else { return }
        _ = charge(-bytes, uid: uid)
    }
}
