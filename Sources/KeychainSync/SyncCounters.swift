import KeychainCore

/// What `sync status` counts, kept across restarts of the daemon in the clear setting
/// `sync-counters` (docs/sync.md, "Local state"): counts and the last rejection's text, which
/// name no key, item or secret. The last error is not kept: it says how the last round went,
/// and the next round says it again.
struct SyncCounters: Equatable {
    var pushed = 0, pulled = 0, rejected = 0, conflicts = 0
    var lastRejection: String?
    var lastError: String?

    static let settingName = "sync-counters"

    /// ASCII: `pushed=N pulled=N rejected=N conflicts=N`, then a line with the last rejection.
    func encoded() -> [UInt8] {
        var text = "pushed=\(pushed) pulled=\(pulled) rejected=\(rejected) conflicts=\(conflicts)"
        if let lastRejection { text += "\n" + lastRejection.filter { $0 != "\n" } }
        return Array(text.utf8)
    }

    /// What `encoded` wrote; a field missing or damaged counts from 0.
    static func decode(_ bytes: [UInt8]) -> SyncCounters {
        var c = SyncCounters()
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        for field in (lines.first ?? "").split(separator: " ") {
            let pair = field.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let n = Int(pair[1]), n >= 0 else { continue }
            switch pair[0] {
            case "pushed": c.pushed = n
            case "pulled": c.pulled = n
            case "rejected": c.rejected = n
            case "conflicts": c.conflicts = n
            default: break
            }
        }
        if lines.count == 2, !lines[1].isEmpty { c.lastRejection = String(lines[1]) }
        return c
    }

    /// The counters the vault holds; zero when none (or before any round counted).
    static func load(_ vault: Vault) -> SyncCounters {
        guard let bytes = try? vault.setting(settingName) else { return SyncCounters() }
        return decode(bytes)
    }

    /// Writes them (`encoded` leaves the last error out); one commit.
    func save(_ vault: Vault) throws {
        try vault.setSetting(Self.settingName, encoded())
    }
}

extension SyncSession {
    /// Writes the counters when they changed, at most every `savePeriod` unless `force`: a
    /// round's counts cost no commit of their own. A crash loses at most that period's counts.
    func saveCountersLocked(force: Bool) {
        var comparable = counters
        comparable.lastError = nil
        guard comparable != savedCounters else { return }
        let now = ContinuousClock.now
        guard force || savedAt.map({ now - $0 >= Self.savePeriod }) ?? true else { return }
        do {
            try counters.save(vault)
            savedCounters = comparable
            savedAt = now
        } catch {
            log("sync: cannot keep the status counters in the vault: \(error)")
        }
    }

    static let savePeriod: Duration = .seconds(30)
}
