import Glibc
import KeychainCore
import KeychainCrypto
import KeychainSync
import KeychainSystem

/// The hosts of `sync-fleet`, all in this process: each a small vault of its own in `dir`,
/// its own host identity and engine, all members of one circle joined through join and
/// approve, each engine run by a `SyncLoop` on a thread of its own as a daemon runs it.
final class FleetHosts: @unchecked Sendable {
    // Unchecked: `vaults` and `loops` are set once in init; `applied` is behind its lock.
    let vaults: [Vault]
    let loops: [SyncLoop]
    static let service = "fleet-bench"
    static let groups = ["bench.keychainfs"]
    /// Account → how many other hosts applied it, and when the last did.
    private let applied = ConditionLock([String: (hosts: Int, last: Double)]())

    /// - Parameters:
    ///   - connections: each engine's (called once per engine).
    ///   - pollMilliseconds: the engines' `sync --poll` (0: they listen).
    ///   - progress: told after each host joins.
    init(count: Int, dir: String, conninfo: String, connections: () -> SyncConnections, pollMilliseconds: Int = 0,
         progress: (Int) -> Void) throws {
        let device = try DeviceKey.loadOrCreate(at: dir + "/device.key")
        let pass = try SecureBytes(copying: Array("keychainfs fleet bench".utf8))
        defer { pass.wipe() }
        var vaults: [Vault] = [], loops: [SyncLoop] = []
        let applied = self.applied
        for i in 0..<count {
            let vault = try Vault.create(at: dir + "/host-\(i).vault", passphrase: pass, kdf: .minimum, deviceKey: device)
            vaults.append(vault)
            loops.append(SyncLoop(vault: vault, connections: connections(), log: { _ in }) { _, change in
                guard let account = change.names.last?.account else { return }
                let key = String(decoding: account, as: UTF8.self)
                applied.withLockWakingWaiters { $0[key, default: (0, 0)].hosts += 1; $0[key]!.last = monotonic() }
            })
        }
        self.vaults = vaults
        self.loops = loops
        _ = try loops[0].engine.initCircle(conninfo: conninfo, name: "fleet-0", pollMilliseconds: pollMilliseconds)
        progress(1)
        for i in 1..<count {
            let code = try loops[i].engine.join(conninfo: conninfo, name: "fleet-\(i)", pollMilliseconds: pollMilliseconds)
            _ = try loops[0].engine.approve(code: code)
            loops[i].engine.step()  // takes the grant
            guard loops[i].engine.status()["state"] == .string("member") else {
                throw SyncError.server("host \(i) did not become a member: \(loops[i].engine.status())")
            }
            progress(i + 1)
        }
        for loop in loops { try SystemThread.detach { loop.run() } }
    }

    /// Adds a synchronizable item on host `host` and kicks its engine. - Returns: when.
    @discardableResult
    func add(_ account: String, on host: Int, kick: Bool = true) throws -> Double {
        let secret = try SecureBytes(copying: Array("fleet secret \(account)".utf8))
        defer { secret.wipe() }
        let t = monotonic()
        try vaults[host].add([.class: .itemClass(.genericPassword), .service: .string(Self.service),
                              .account: .string(account), .synchronizable: .bool(true)], secret: secret,
                             accessGroups: Self.groups)
        if kick { loops[host].kick() }
        return t
    }

    /// Waits until every other host applied each of `accounts`. - Returns: when the last
    /// did, or nil after `timeout` seconds.
    func waitApplied(_ accounts: [String], timeout: Double) -> Double? {
        let others = loops.count - 1, deadline = monotonic() + timeout
        return applied.wait { a in
            var last = 0.0
            for account in accounts {
                guard let seen = a[account], seen.hosts >= others else {
                    return monotonic() >= deadline ? .done(nil) : .waitUntil(seconds: deadline)
                }
                last = max(last, seen.last)
            }
            return .done(last)
        }
    }

    /// How many of the bench's items each vault holds.
    func itemCounts() -> [Int] {
        vaults.map { v in
            let found = try? v.copyMatching([.class: .itemClass(.genericPassword), .service: .string(Self.service),
                                             .synchronizable: .synchronizableAny, .matchLimit: .matchLimitAll,
                                             .returnAttributes: true], accessGroups: Self.groups)
            if case .array(let items) = found { return items.count }
            return 0
        }
    }

    func stop() { for loop in loops { loop.stop() } }
}
