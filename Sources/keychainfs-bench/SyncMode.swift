import Glibc
import KeychainClient
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import KeychainSync

/// `keychainfs-bench sync --vault A --mount MNT [--changes N] [--burst M] [--fill K]
/// [--prefix P] [--baseline CONNINFO]`, for bench/sync.sh: fleet sync between two hosts whose
/// daemons are running and in one circle.
///
/// - `--changes N`: N times, one synchronizable add through A's daemon, then `stat` of its
///   file in B's mount (MNT, another host's) every 0.5 ms until it exists: propagation latency.
/// - `--burst M`: M adds through A's daemon as fast as one client sends them, then waits
///   until every one's file is in MNT: throughput.
/// - `--fill K`: K adds through A's daemon, not waited for (a server full of items for a new host).
/// - `--baseline CONNINFO`: N round trips of INSERT + NOTIFY to a listener on the same
///   server through libpq (`NotifyBaseline`; N of them, 1,000 without `--changes`), the floor under the latency.
/// Prints `key=value` lines: `latency_p50_ms=`, `latency_p99_ms=`, `burst_rate=`, ...
func syncMode(_ args: [String]) {
    let usage = "usage: keychainfs-bench sync --vault A --mount MNT [--changes N] [--burst M] [--fill K] [--prefix P] [--baseline CONNINFO]"
    var vault = "", mount = "", prefix = "s", baseline: String?
    var changes = 0, burst = 0, fill = 0
    let c = ArgumentCursor(args, from: 0, usage: usage)
    while let a = c.current {
        switch a {
        case "--vault": vault = Paths.canonical(c.value(a))
        case "--mount": mount = c.value(a)
        case "--changes": changes = c.positive(a)
        case "--burst": burst = c.positive(a)
        case "--fill": fill = c.positive(a)
        case "--prefix": prefix = c.value(a)
        case "--baseline": baseline = c.value(a)
        default: fail("sync: unknown option \(a)\n\n" + usage)
        }
        c.advance()
    }
    guard !vault.isEmpty else { fail(usage) }
    let client: DaemonClient
    do { client = try DaemonClient.connect(vaultPath: vault) } catch { fail("sync: cannot reach the daemon of \(vault): \(error)") }
    let service = "sync-bench"
    var next = 0
    func add() -> String {
        let account = prefix + String(next)
        next += 1
        let query: Attributes = [.class: .itemClass(.genericPassword), .service: .string(service), .account: .string(account),
                                 .synchronizable: .bool(true)]
        do {
            let secret = try SecureBytes(copying: Array("sync bench secret \(account)".utf8))
            defer { secret.wipe() }
            try client.send(Request(.add, query: query, secrets: [secret]))
        } catch {
            fail("sync: add \(account): \(error)")
        }
        return mount + "/" + service + "/" + account
    }
    func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    if changes > 0 {
        guard !mount.isEmpty else { fail("sync: --changes needs --mount") }
        var latencies: [Double] = [], adds: [Double] = []
        for i in 0..<changes {
            let t0 = monotonic()
            let path = add()
            adds.append(monotonic() - t0)
            while !exists(path) { usleep(500) }
            latencies.append(monotonic() - t0)
            if (i + 1) % 100 == 0 { emit("sync: \(i + 1) of \(changes) changes", fd: 2) }
        }
        emit("changes=\(changes) " + summary("latency", latencies) + " " + summary("add", adds))
    }
    if burst > 0 {
        guard !mount.isEmpty else { fail("sync: --burst needs --mount") }
        let t0 = monotonic()
        let paths = (0..<burst).map { _ in add() }
        let sent = monotonic() - t0
        var waiting = paths.reversed() as [String]  // the last written is likely the last to come
        while let p = waiting.first {
            if exists(p) { waiting.removeFirst() } else { usleep(2000) }
        }
        let all = monotonic() - t0
        emit("burst=\(burst) burst_send_s=\(plain(sent, 3)) burst_all_s=\(plain(all, 3)) "
             + "burst_send_rate=\(plain(Double(burst) / sent, 0)) burst_rate=\(plain(Double(burst) / all, 0))")
    }
    if fill > 0 {
        let t0 = monotonic()
        for _ in 0..<fill { _ = add() }
        emit("fill=\(fill) fill_s=\(plain(monotonic() - t0, 3))")
    }
    if let baseline {
        do {
            let trips = try NotifyBaseline.roundTrips(conninfo: baseline, count: changes > 0 ? changes : 1000)
            emit(summary("notify", trips))
        } catch {
            fail("sync: baseline: \(error)")
        }
    }
}

/// `NAME_p50_ms= NAME_p99_ms= NAME_mean_ms= NAME_max_ms=` of durations in seconds.
func summary(_ name: String, _ seconds: [Double]) -> String {
    let s = seconds.sorted()
    guard !s.isEmpty else { return "\(name)_n=0" }
    func at(_ q: Double) -> Double { s[min(s.count - 1, Int((q * Double(s.count)).rounded(.up)) - 1)] * 1000 }
    let mean = s.reduce(0, +) / Double(s.count) * 1000
    return "\(name)_p50_ms=\(plain(at(0.5), 2)) \(name)_p99_ms=\(plain(at(0.99), 2)) \(name)_mean_ms=\(plain(mean, 2)) \(name)_max_ms=\(plain(s.last! * 1000, 2))"
}
