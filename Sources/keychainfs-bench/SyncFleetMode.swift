import Glibc
import KeychainCore
import KeychainSync
import KeychainSystem
import Synchronization

/// `keychainfs-bench sync-fleet --server CONNINFO --hosts N [--changes M] [--samples K]
/// [--connections held|shared|polled] [--pool P] [--poll MS] [--dir PATH] [--baseline]`, for bench/sync.sh --fleet: N sync
/// engines in this process (`FleetHosts`), one circle, one PostgreSQL server.
///
/// - `--samples K` (20): K times, one add on a host (each in turn) until every other host
///   applied it: one change's propagation to all N.
/// - `--changes M` (1000): M adds spread over the hosts (host k % N), all at once, until
///   every host applied every one; then every vault is counted.
/// - `--connections`: `shared` (the daemon's: rounds borrow from a pool of P, 8 by default,
///   one LISTEN connection wakes them), `held` (each engine holds two, as before issue 32) or
///   `polled` (each engine as a daemon of its own would run it, with a pool of its own, no
///   LISTEN, a round every `--poll` MS milliseconds, 1000 by default: for CONNINFO naming a pooler in
///   transaction mode, as separate machines would reach the server).
/// - `--baseline`: then `--samples` INSERT + NOTIFY round trips to a listener through libpq
///   on the same server (`NotifyBaseline`), the floor under one host's propagation; through
///   `--baseline-server CONNINFO` when CONNINFO names a pooler, which cannot carry LISTEN.
/// The server's client backends and the resident memory of its processes are sampled every
/// 200 ms; the most seen is printed. Prints `key=value` on one line.
func syncFleetMode(_ args: [String]) {
    let usage = """
        usage: keychainfs-bench sync-fleet --server CONNINFO --hosts N [--changes M] [--samples K]
                                           [--connections held|shared|polled] [--pool P] [--poll MS] [--dir PATH]
                                           [--baseline] [--baseline-server CONNINFO]
        """
    var conninfo = "", hosts = 0, changes = 1000, samples = 20, pool = 8, mode = "shared", poll = 1000
    var parent = "/var/tmp", baseline = false, baselineServer: String?
    let c = ArgumentCursor(args, from: 0, usage: usage)
    while let a = c.current {
        switch a {
        case "--server": conninfo = c.value(a)
        case "--hosts": hosts = c.positive(a)
        case "--changes": changes = c.positive(a)
        case "--samples": samples = c.positive(a)
        case "--pool": pool = c.positive(a)
        case "--poll": poll = c.positive(a)  // milliseconds
        case "--dir": parent = c.value(a)
        case "--baseline": baseline = true
        case "--baseline-server": baselineServer = c.value(a)
        case "--connections":
            mode = c.value(a)
            guard ["held", "shared", "polled"].contains(mode) else { fail("sync-fleet: --connections is held, shared or polled\n\n" + usage) }
        default: fail("sync-fleet: unknown option \(a)\n\n" + usage)
        }
        c.advance()
    }
    guard !conninfo.isEmpty, hosts >= 2 else { fail(usage) }
    var template = Array((parent + "/keychainfs-fleet.XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { fail("sync-fleet: cannot make a directory in \(parent)") }
    let dir = String(cString: made)
    defer { removeFleetDirectory(dir) }
    func bail(_ message: String) -> Never {
        removeFleetDirectory(dir)
        fail("sync-fleet: " + message)
    }

    let shared = SyncConnections.shared(pool: SyncServerPool(limit: pool, idleSeconds: 10), waker: SyncWaker())
    let connections: () -> SyncConnections = {
        switch mode {
        case "held": return .held
        case "shared": return shared
        // A daemon's own: its pool (it polls, so its waker is never asked to listen).
        default: return .shared(pool: SyncServerPool(limit: 1, idleSeconds: 10), waker: SyncWaker())
        }
    }
    let sampler: FootprintSampler
    do { sampler = try FootprintSampler(conninfo: conninfo) } catch { bail("cannot reach the server: \(error)") }
    let t0 = monotonic()
    let fleet: FleetHosts
    do {
        fleet = try FleetHosts(count: hosts, dir: dir, conninfo: conninfo, connections: connections,
                               pollMilliseconds: mode == "polled" ? poll : 0) { n in
            if n % 50 == 0 { emit("sync-fleet: \(n) of \(hosts) hosts in the circle", fd: 2) }
        }
    } catch {
        bail("forming the circle: \(error)")
    }
    emit("sync-fleet: \(hosts) hosts in the circle after \(plain(monotonic() - t0, 1)) s", fd: 2)
    sampler.start()
    usleep(4_000_000)  // two idle rounds of every engine: their connections are open
    var out = "hosts=\(hosts) connections=\(mode)" + (mode == "shared" ? " pool=\(pool)" : mode == "polled" ? " poll_ms=\(poll)" : "")

    var latencies: [Double] = []
    for s in 0..<samples {
        let account = "p\(s)"
        do {
            let written = try fleet.add(account, on: s % hosts)
            guard let last = fleet.waitApplied([account], timeout: 120) else { bail("change \(s) did not reach every host in 120 s") }
            latencies.append(last - written)
        } catch {
            bail("add: \(error)")
        }
    }
    out += " " + summary("all_hosts", latencies)

    let accounts = (0..<changes).map { "c\($0)" }
    let started = monotonic()
    do {
        for (k, account) in accounts.enumerated() { try fleet.add(account, on: k % hosts, kick: false) }
        for loop in fleet.loops { loop.kick() }
    } catch {
        bail("add: \(error)")
    }
    let sent = monotonic() - started
    let converged = fleet.waitApplied(accounts, timeout: 900).map { $0 - started }
    let counts = fleet.itemCounts()
    let complete = counts.filter { $0 == samples + changes }.count
    out += " changes=\(changes) changes_written_s=\(plain(sent, 2)) converged_s=\(converged.map { plain($0, 2) } ?? "timeout")"
    out += " vaults_complete=\(complete) vaults=\(hosts)"
    let footprint = sampler.stop()
    out += " backends_max=\(footprint.backends) server_rss_max_mib=\(plain(Double(footprint.resident) / 1_048_576, 1))"
    out += " server_anon_max_mib=\(plain(Double(footprint.anonymous) / 1_048_576, 1)) server_processes_max=\(footprint.processes)"
    fleet.stop()
    if baseline {
        do { out += " " + summary("notify", try NotifyBaseline.roundTrips(conninfo: baselineServer ?? conninfo, count: max(samples, 100))) }
        catch { bail("baseline: \(error)") }
    }
    emit(out)
    if complete != hosts { removeFleetDirectory(dir); exit(1) }
}

/// Samples the server's client backends and memory every 200 ms on a thread of its own.
private final class FootprintSampler: @unchecked Sendable {
    // Unchecked: `probe` is used by the sampling thread only, after `start`.
    struct Most: Sendable { var backends = 0, resident: Int64 = 0, anonymous: Int64 = 0, processes = 0 }
    private let probe: ServerProbe
    private let backend: Int32
    private let most = Mutex(Most())
    private let running = Atomic<Bool>(false)
    private let done = ConditionLock(false)

    init(conninfo: String) throws {
        probe = try ServerProbe(conninfo: conninfo)
        backend = try probe.backendPID()
    }

    func start() {
        running.store(true, ordering: .releasing)
        do {
            try SystemThread.detach { [self] in
                while running.load(ordering: .acquiring) {
                    sample()
                    usleep(200_000)
                }
                done.withLockWakingWaiters { $0 = true }
            }
        } catch {
            fail("sync-fleet: cannot start the sampler")
        }
    }

    func stop() -> Most {
        running.store(false, ordering: .releasing)
        done.wait { $0 ? .done(()) : .wait }
        sample()
        return most.withLock { $0 }
    }

    private func sample() {
        let backends = (try? probe.clientBackends()) ?? 0
        let memory = ServerMemory.of(backend: backend) ?? ServerMemory()
        most.withLock {
            $0.backends = max($0.backends, backends)
            $0.resident = max($0.resident, memory.residentBytes)
            $0.anonymous = max($0.anonymous, memory.anonymousBytes)
            $0.processes = max($0.processes, memory.processes)
        }
    }
}

/// Removes the fleet's vaults, their -wal and -shm files, the device key and the directory.
private func removeFleetDirectory(_ dir: String) {
    guard let d = opendir(dir) else { return }
    var names: [String] = []
    while let entry = readdir(d) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    closedir(d)
    for name in names { unlink(dir + "/" + name) }
    rmdir(dir)
}
