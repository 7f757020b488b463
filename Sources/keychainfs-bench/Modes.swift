// Extra modes of keychainfs-bench, used by bench/run.sh:
//
//   keychainfs-bench fill   --vault PATH --service S --count N [--prefix P] [--per-service M]
//                           [--group G] [--batch B] [--start K] [--finds F [--threads T,...]]
//   keychainfs-bench finds  --vault PATH --service S --items N [--prefix P] [--per-service M]
//                           [--group G] [--finds F] [--threads T,...]
//   keychainfs-bench socket --vault PATH --service S (--account A | --accounts N [--prefix P]
//                           [--per-service M]) [--clients C] [--seconds T] [--service-times]
//   keychainfs-bench idle   --vault PATH [--connections N] [--seconds T] [--partial]
//
// `fill` opens a vault file that no daemon is serving, unlocks it with the passphrase on standard
// input (one line) and adds N WhenUnlocked generic passwords `S`/`P0`..`P(N-1)` (32-byte secrets)
// with `Vault.addAll`, in batches, in the access group G (default "default", the group that
// create-keychain makes). With --per-service M the items are spread over services S0, S1, ...
// with M accounts each (item i is S<i/M>/P<i>). With --start K the items are K .. K+N-1, so that
// a vault can be grown step by step. With --finds F it then looks up F random items of
// 0 .. K+N-1 in process (copyMatching with r_Data, secrets checked) and reports their rate;
// with --threads 1,2,8 the same F lookups are made by 1, then 2, then 8 threads at once on the
// one vault, and each rate is printed with its ratio to the first. `finds` does only the
// lookups, on a vault filled before with N items (`fill` made them). The device key is the
// default one (`$KEYCHAINFS_DEVICE_KEY`).
//
// `socket` measures SecItemCopyMatching through the daemon: C threads, each with its own
// connection (`DaemonClient.connect`), send `copyMatching` requests with `r_Data` for T seconds
// (a fixed account, or one drawn at random from P0..P(N-1)) and check each answer's 32 bytes.
//
// `idle` (IdleMode.swift) opens N connections and holds them for T seconds, for the load test.
//
// Each prints one `key=value` line on standard output for the script; progress goes to stderr.
import Glibc
import KeychainClient
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import Synchronization

struct ModeOptions {
    var vault: String?
    var service = "big"
    var account: String?
    var accounts = 0
    var count = 0
    var prefix = "user"
    var group = "default"
    var batch = 10_000
    var perService = 0
    var start = 0
    var finds = 0
    var threads = [1]
    var items = 0
    var clients = 1
    var seconds = 3.0
    var connections = 1000
    var partial = false
    var serviceTimes = false
}

func parseModeOptions(_ args: [String], usage: String) -> ModeOptions {
    var o = ModeOptions()
    let c = ArgumentCursor(args, from: 0, usage: usage)
    while let a = c.current {
        switch a {
        case "--help", "-h": emit(usage); exit(0)
        case "--vault": o.vault = c.value(a)
        case "--service": o.service = c.value(a)
        case "--account": o.account = c.value(a)
        case "--accounts": o.accounts = c.positive(a)
        case "--count": o.count = c.positive(a)
        case "--prefix": o.prefix = c.value(a)
        case "--group": o.group = c.value(a)
        case "--batch": o.batch = c.positive(a)
        case "--per-service": o.perService = c.positive(a)
        case "--start":
            guard let k = Int(c.value(a).filter { $0 != "_" && $0 != "," }), k >= 0 else { fail("--start: not a number: \(c.args[c.index])") }
            o.start = k
        case "--finds": o.finds = c.positive(a)
        case "--items": o.items = c.positive(a)
        case "--threads":
            let list = c.value(a).split(separator: ",").map { Int($0) }
            guard !list.isEmpty, list.allSatisfy({ ($0 ?? 0) > 0 }) else { fail("--threads: positive integers separated by commas") }
            o.threads = list.map { $0! }
        case "--clients": o.clients = c.positive(a)
        case "--connections": o.connections = c.positive(a)
        case "--partial": o.partial = true
        case "--service-times": o.serviceTimes = true
        case "--seconds":
            guard let s = Double(c.value(a)), s > 0 else { fail("--seconds: not a positive number") }
            o.seconds = s
        default: fail("unknown option \(a)\n\n" + usage)
        }
        c.advance()
    }
    return o
}

/// One line of standard input, without its newline, in guarded memory.
func readPassphraseLine() throws -> SecureBytes {
    var bytes: [UInt8] = []
    var c: UInt8 = 0
    while read(0, &c, 1) == 1 {
        if c == UInt8(ascii: "\n") { break }
        bytes.append(c)
    }
    defer { wipeBytes(&bytes) }
    return try SecureBytes(copying: bytes)
}

/// The 32 secret bytes of fill item `i`.
func fillSecretBytes(_ i: Int) -> [UInt8] {
    var g = SplitMix64(state: UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15 ^ 0xF1F1)
    var out: [UInt8] = []
    out.reserveCapacity(32)
    for _ in 0..<4 {
        var w = g.next()
        for _ in 0..<8 { out.append(UInt8(truncatingIfNeeded: w)); w >>= 8 }
    }
    return out
}

func fillSecret(_ i: Int) throws -> SecureBytes {
    var out = fillSecretBytes(i)
    defer { wipeBytes(&out) }
    return try SecureBytes(copying: out)
}

/// The service of fill item `i`: S, or S<i/M> with --per-service M.
func fillService(_ i: Int, _ o: ModeOptions) -> String {
    o.perService > 0 ? o.service + String(i / o.perService) : o.service
}

// MARK: fill

let fillUsage = """
    usage: keychainfs-bench fill --vault PATH --service S --count N [--prefix P] [--per-service M]
                                 [--group G] [--batch B] [--start K] [--finds F]

    Adds N WhenUnlocked generic passwords S/P0 .. S/P(N-1) (32-byte secrets) to a vault that no
    daemon is serving, with Vault.addAll in batches of B (default 10000), in access group G
    (default "default"). With --per-service M, item i goes to service S<i/M> instead of S.
    With --start K the items added are K .. K+N-1 (growing a vault filled before up to K).
    With --finds F, F lookups (copyMatching with r_Data) of random items 0 .. K+N-1 follow in
    the same process, and their rate is printed (find_rate). With --threads T1,T2,... the F
    lookups are made again by each count of threads at once (find_rate_T each, find_ratio_T to
    the first count); find_rate and find_cpu_us (CPU microseconds per lookup) are the first
    count's. The passphrase is one line of standard input.
    """

func fillMode(_ args: [String]) {
    let o = parseModeOptions(args, usage: fillUsage)
    guard let path = o.vault, o.count > 0 else { fail("fill needs --vault and --count\n\n" + fillUsage) }
    // The daemon would not see items added behind its back while it runs: refuse.
    if (try? DaemonClient.connect(vaultPath: Paths.canonical(path))) != nil {
        fail("a daemon is serving \(path); stop it first (keychainfs stop)")
    }
    guard let pass = try? readPassphraseLine() else { fail("no guarded memory for the passphrase") }
    let started = monotonic()
    do {
        let vault = try Vault.open(at: path, deviceKey: try DeviceKey.loadOrCreate())
        vault.keepsReadSnapshots = true  // as the daemon runs its vault: no daemon serves it now
        try vault.unlock(passphrase: pass)
        pass.wipe()
        var done = 0
        var inAddAll = 0.0
        while done < o.count {
            let n = min(o.batch, o.count - done)
            var batch: [(attributes: Attributes, secret: SecureBytes?)] = []
            batch.reserveCapacity(n)
            for i in (o.start + done)..<(o.start + done + n) {
                batch.append(([.class: .itemClass(.genericPassword), .service: .string(fillService(i, o)), .account: .string(o.prefix + String(i)),
                               .accessible: .protection(.whenUnlocked)], try fillSecret(i)))
            }
            let t0 = monotonic()
            try vault.addAll(batch, accessGroups: [o.group])
            let t = monotonic() - t0
            inAddAll += t
            done += n
            batch.removeAll()
            emit("fill: \(grouped(done)) / \(grouped(o.count)) (items up to \(grouped(o.start + done))): "
                 + "this batch \(rate(Double(n) / t)) items/s in addAll", fd: 2)
        }
        let total = monotonic() - started
        let findFigures = o.finds > 0 ? try findFiguresLine(vault, o, items: o.start + o.count) : ""
        vault.lock()
        emit("fill_items=\(o.count) fill_seconds=\(plain(total, 3)) fill_addall_seconds=\(plain(inAddAll, 3)) "
             + "fill_rate=\(plain(Double(o.count) / inAddAll, 0))" + findFigures)
    } catch {
        fail("fill failed: \(describe(error))")
    }
}

// MARK: finds

let findsUsage = """
    usage: keychainfs-bench finds --vault PATH --service S --items N [--prefix P] [--per-service M]
                                  [--group G] [--finds F] [--threads T1,T2,...]

    Opens a vault that no daemon is serving and that `fill` filled with items 0 .. N-1 (the same
    --service, --prefix, --per-service and --group), unlocks it with the passphrase on standard
    input (one line) and makes F (default 100000) lookups of random items in process
    (copyMatching with r_Data, secrets checked), from each count of threads in turn (default 1).
    Prints find_rate (the first count's) and find_cpu_us (CPU microseconds per lookup, summed
    over the threads: steadier than the rate on a machine others load), then find_rate_T,
    find_ratio_T and find_cpu_us_T for each count T.
    """

func findsMode(_ args: [String]) {
    var o = parseModeOptions(args, usage: findsUsage)
    guard let path = o.vault, o.items > 0 else { fail("finds needs --vault and --items\n\n" + findsUsage) }
    if o.finds == 0 { o.finds = 100_000 }
    if (try? DaemonClient.connect(vaultPath: Paths.canonical(path))) != nil {
        fail("a daemon is serving \(path); stop it first (keychainfs stop)")
    }
    guard let pass = try? readPassphraseLine() else { fail("no guarded memory for the passphrase") }
    do {
        let vault = try Vault.open(at: path, deviceKey: try DeviceKey.loadOrCreate())
        vault.keepsReadSnapshots = true  // as the daemon runs its vault: no daemon serves it now
        try vault.unlock(passphrase: pass)
        pass.wipe()
        let line = try findFiguresLine(vault, o, items: o.items)
        vault.lock()
        emit("finds_items=\(o.items)" + line)
    } catch {
        fail("finds failed: \(describe(error))")
    }
}

/// One thread's share of the lookups; written by its thread only, read after the join.
final class FindWorker: @unchecked Sendable {
    let vault: Vault
    let groups: [String]
    let queries: [Attributes]
    let expected: [[UInt8]]
    var start = Double.infinity
    var wrong = 0
    var failure: String?
    /// CPU seconds this thread spent in its lookups: on a machine others load, a steadier
    /// figure than the rate.
    var cpuSeconds = 0.0

    init(vault: Vault, options o: ModeOptions, sample: [Int]) {
        self.vault = vault
        groups = [o.group]
        // Built before the clock starts, so the loop measures the lookup, not string building.
        queries = sample.map {
            [.class: .itemClass(.genericPassword), .service: .string(fillService($0, o)), .account: .string(o.prefix + String($0)),
             .returnData: true]
        }
        expected = sample.map(fillSecretBytes)
    }

    func run() {
        while monotonic() < start { usleep(100) }
        let cpu0 = threadCPUSeconds()
        defer { cpuSeconds = threadCPUSeconds() - cpu0 }
        for (k, q) in queries.enumerated() {
            do {
                let r = try vault.copyMatching(q, accessGroups: groups)
                let ok = r.value?.data?.withUnsafeBytes { $0.elementsEqual(expected[k]) } ?? false
                if !ok { wrong += 1 }
            } catch {
                failure = describe(error)
                return
            }
        }
    }
}

/// `find_ops=F find_seconds=.. find_rate=..`, then with several thread counts the rate of each
/// and its ratio to the first: F lookups of random items below `items` in every run, the same
/// ones, split between the threads, which start together; the time runs to the last join.
func findFiguresLine(_ vault: Vault, _ o: ModeOptions, items: Int) throws -> String {
    var rng = SplitMix64(state: 0xF1D5 &+ UInt64(items))
    let sample = (0..<o.finds).map { _ in rng.below(items) }
    var line = ""
    var firstRate = 0.0
    for (run, threads) in o.threads.enumerated() {
        let workers = (0..<threads).map { t in
            FindWorker(vault: vault, options: o, sample: Array(sample[(t * o.finds / threads)..<((t + 1) * o.finds / threads)]))
        }
        let start = monotonic() + 0.05  // every thread is waiting by then
        for w in workers { w.start = start }
        let joined = workers.map { w in startJoinableThread { w.run() } }
        for t in joined { pthread_join(t, nil) }
        let seconds = monotonic() - start
        if let failure = workers.compactMap(\.failure).first { fail("find: \(failure)") }
        let wrong = workers.reduce(0) { $0 + $1.wrong }
        if wrong > 0 { fail("find: \(wrong) of \(o.finds) lookups returned a wrong secret") }
        let rate = Double(o.finds) / seconds
        let cpu = workers.reduce(0) { $0 + $1.cpuSeconds } / Double(o.finds) * 1e6
        if run == 0 {
            firstRate = rate
            line += " find_ops=\(o.finds) find_seconds=\(plain(seconds, 3)) find_rate=\(plain(rate, 0)) find_cpu_us=\(plain(cpu, 2))"
        }
        if o.threads.count > 1 {
            line += " find_rate_\(threads)=\(plain(rate, 0)) find_ratio_\(threads)=\(plain(rate / firstRate, 2))"
                + " find_cpu_us_\(threads)=\(plain(cpu, 2))"
        }
    }
    return line
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
func threadCPUSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

// MARK: socket

let socketUsage = """
    usage: keychainfs-bench socket --vault PATH --service S (--account A | --accounts N [--prefix P]
                                   [--per-service M]) [--clients C] [--seconds T] [--service-times]

    C threads (default 1), each with its own connection to the vault's running daemon, send
    copyMatching requests with r_Data for S/A (or S/P<random i below N>; with --per-service M,
    S<i/M>/P<i>, the layout of fill --per-service) for T seconds (default 3) and check that each
    answer holds a secret. Prints lookups per second, per-request latency and this process's
    CPU per lookup (its threads' setup included, so run it for seconds). With
    --service-times (the vault's owner or root), also the daemon's own count of the run's
    requests: their wait inside the daemon and their service, median and 99th percentile,
    the owner's and root's (daemon_*) apart from other users' (daemon_others_*).
    """

/// One client thread's work and results.
final class SocketWorker: Sendable {
    let vault: String
    let service: String
    let account: String?
    let accounts: Int
    let prefix: String
    let perService: Int
    let start: Double
    let end: Double
    let seed: UInt64

    struct Results: Sendable {
        var ops = 0
        var errors = 0
        var firstError: String?
        var latencies: [Double] = []
    }
    /// Set once by the worker's thread as it ends, read after the join.
    let results = Mutex(Results())

    init(vault: String, options o: ModeOptions, start: Double, seed: UInt64) {
        self.vault = vault
        self.service = o.service
        self.account = o.account
        self.accounts = o.accounts
        self.prefix = o.prefix
        self.perService = o.perService
        self.start = start
        self.end = start + o.seconds
        self.seed = seed
    }

    func run() {
        var r = Results()
        defer { results.withLock { [r] in $0 = r } }
        let client: DaemonClient
        do { client = try DaemonClient.connect(vaultPath: vault) } catch {
            r.errors += 1
            r.firstError = "connect: \(describe(error))"
            return
        }
        var rng = SplitMix64(state: seed)
        // Prebuilt queries, so the loop measures the request, not string building.
        let fixedQuery: Attributes? = account.map {
            [.class: .itemClass(.genericPassword), .service: .string(service), .account: .string($0), .returnData: true]
        }
        r.latencies.reserveCapacity(200_000)
        while monotonic() < start { usleep(200) }
        while true {
            let query = fixedQuery ?? {
                let i = rng.below(accounts)
                let s = perService > 0 ? service + String(i / perService) : service
                return [.class: .itemClass(.genericPassword), .service: .string(s), .account: .string(prefix + String(i)), .returnData: true]
            }()
            let t0 = monotonic()
            if t0 >= end { break }
            do {
                let answer = try client.send(Request(.copyMatching, query: query))
                let t1 = monotonic()
                if let d = answer.result.value?.data, d.count > 0 {
                    r.ops += 1
                    r.latencies.append(t1 - t0)
                } else {
                    r.errors += 1
                    if r.firstError == nil { r.firstError = "no data in the answer" }
                }
            } catch {
                r.errors += 1
                if r.firstError == nil { r.firstError = describe(error) }
                if r.errors > 100 { break }
            }
        }
    }
}

func startJoinableThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box: Sendable { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, context)
    guard rc == 0 else { fail("pthread_create failed: \(rc)") }
    return thread
}

/// User and system CPU time of this process so far (getrusage), in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// A number without digit grouping, for `key=value` output.
func plain(_ x: Double, _ decimals: Int) -> String { fixed(x, decimals).filter { $0 != "," } }

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let rank = max(1, min(sorted.count, Int((p / 100 * Double(sorted.count)).rounded(.up))))
    return sorted[rank - 1]
}

func socketMode(_ args: [String]) {
    let o = parseModeOptions(args, usage: socketUsage)
    guard let path = o.vault else { fail("socket needs --vault\n\n" + socketUsage) }
    guard o.account != nil || o.accounts > 0 else { fail("socket needs --account or --accounts\n\n" + socketUsage) }
    let vault = Paths.canonical(path)
    // Connections are made inside the threads before the common start time.
    // The daemon's own count of the owner's wait and service starts with this run.
    let admin = o.serviceTimes ? try? DaemonClient.connect(vaultPath: vault) : nil
    if o.serviceTimes {
        guard let admin, (try? admin.call(ServiceTimesRequest(reset: true), ServiceTimes.self)) != nil else {
            fail("--service-times: the daemon does not report its service times to this user")
        }
    }
    let start = monotonic() + 0.3
    let cpuBefore = processCPUSeconds()
    let workers = (0..<o.clients).map { SocketWorker(vault: vault, options: o, start: start, seed: 0x5EED &+ UInt64($0)) }
    let threads = workers.map { w in startJoinableThread { w.run() } }
    for t in threads { pthread_join(t, nil) }
    let clientCPU = processCPUSeconds() - cpuBefore
    let results = workers.map { $0.results.withLock { $0 } }
    let ops = results.reduce(0) { $0 + $1.ops }
    let errors = results.reduce(0) { $0 + $1.errors }
    let all = results.flatMap(\.latencies).sorted()
    if let e = results.compactMap(\.firstError).first { emit("keychainfs-bench socket: \(errors) errors, first: \(e)", fd: 2) }
    emit("clients=\(o.clients) seconds=\(plain(o.seconds, 1)) ops=\(ops) errors=\(errors) "
         + "rate=\(plain(Double(ops) / o.seconds, 0)) median_us=\(plain(percentile(all, 50) * 1e6, 1)) "
         + "p90_us=\(plain(percentile(all, 90) * 1e6, 1)) client_cpu_us_per_op=\(plain(clientCPU * 1e6 / Double(max(ops, 1)), 2))")
    if let admin, let t = try? admin.call(ServiceTimesRequest(), ServiceTimes.self) {
        // In the daemon: the privileged (owner's and root's) requests, and everyone else's.
        for (name, s) in [("daemon", t.privileged), ("daemon_others", t.others)] {
            emit("\(name)_requests=\(s.requests) \(name)_wait_p50_us=\(s.waitMedian) \(name)_wait_p99_us=\(s.waitP99) "
                 + "\(name)_service_p50_us=\(s.serviceMedian) \(name)_service_p99_us=\(s.serviceP99)")
        }
    }
    if ops == 0 || errors > 0 { exit(1) }
}
