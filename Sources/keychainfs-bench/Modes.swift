// Extra modes of keychainfs-bench, used by bench/run.sh:
//
//   keychainfs-bench fill   --vault PATH --service S --count N [--prefix P] [--per-service M]
//                           [--group G] [--batch B]
//   keychainfs-bench socket --vault PATH --service S (--account A | --accounts N [--prefix P])
//                           [--clients C] [--seconds T]
//
// `fill` opens a vault file that no daemon is serving, unlocks it with the passphrase on standard
// input (one line) and adds N WhenUnlocked generic passwords `S`/`P0`..`P(N-1)` (32-byte secrets)
// with `Vault.addAll`, in batches, in the access group G (default "default", the group that
// create-keychain makes). With --per-service M the items are spread over services S0, S1, ...
// with M accounts each (item i is S<i/M>/P<i>). The device key is the default one (`$KEYCHAINFS_DEVICE_KEY`).
//
// `socket` measures SecItemCopyMatching through the daemon: C threads, each with its own
// connection (`DaemonClient.connect`), send `copyMatching` requests with `r_Data` for T seconds
// (a fixed account, or one drawn at random from P0..P(N-1)) and check each answer's 32 bytes.
//
// Both print one `key=value` line on standard output for the script; progress goes to stderr.
import Glibc
import KeychainClient
import KeychainCore
import KeychainCrypto
import KeychainProtocol

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
    var clients = 1
    var seconds = 3.0
}

func parseModeOptions(_ args: [String], usage: String) -> ModeOptions {
    var o = ModeOptions()
    var i = 0
    func value(_ name: String) -> String {
        i += 1
        guard i < args.count else { fail("\(name) needs a value\n\n" + usage) }
        return args[i]
    }
    func positive(_ name: String) -> Int {
        let v = value(name).filter { $0 != "_" && $0 != "," }
        guard let n = Int(v), n > 0 else { fail("\(name): not a positive integer: \(args[i])") }
        return n
    }
    while i < args.count {
        let a = args[i]
        switch a {
        case "--help", "-h": emit(usage); exit(0)
        case "--vault": o.vault = value(a)
        case "--service": o.service = value(a)
        case "--account": o.account = value(a)
        case "--accounts": o.accounts = positive(a)
        case "--count": o.count = positive(a)
        case "--prefix": o.prefix = value(a)
        case "--group": o.group = value(a)
        case "--batch": o.batch = positive(a)
        case "--per-service": o.perService = positive(a)
        case "--clients": o.clients = positive(a)
        case "--seconds":
            guard let s = Double(value(a)), s > 0 else { fail("--seconds: not a positive number") }
            o.seconds = s
        default: fail("unknown option \(a)\n\n" + usage)
        }
        i += 1
    }
    return o
}

/// One line of standard input, without its newline, in guarded memory.
func readPassphraseLine() -> SecureBytes {
    var bytes: [UInt8] = []
    var c: UInt8 = 0
    while read(0, &c, 1) == 1 {
        if c == UInt8(ascii: "\n") { break }
        bytes.append(c)
    }
    defer { wipeBytes(&bytes) }
    return SecureBytes(copying: bytes)
}

/// The 32 secret bytes of fill item `i`.
func fillSecret(_ i: Int) -> SecureBytes {
    var g = SplitMix64(state: UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15 ^ 0xF1F1)
    var out: [UInt8] = []
    out.reserveCapacity(32)
    for _ in 0..<4 {
        var w = g.next()
        for _ in 0..<8 { out.append(UInt8(truncatingIfNeeded: w)); w >>= 8 }
    }
    defer { wipeBytes(&out) }
    return SecureBytes(copying: out)
}

// MARK: fill

let fillUsage = """
    usage: keychainfs-bench fill --vault PATH --service S --count N [--prefix P] [--per-service M]
                                 [--group G] [--batch B]

    Adds N WhenUnlocked generic passwords S/P0 .. S/P(N-1) (32-byte secrets) to a vault that no
    daemon is serving, with Vault.addAll in batches of B (default 10000), in access group G
    (default "default"). With --per-service M, item i goes to service S<i/M> instead of S.
    The passphrase is one line of standard input.
    """

func fillMode(_ args: [String]) {
    let o = parseModeOptions(args, usage: fillUsage)
    guard let path = o.vault, o.count > 0 else { fail("fill needs --vault and --count\n\n" + fillUsage) }
    // The daemon would not see items added behind its back while it runs: refuse.
    if (try? DaemonClient.connect(vaultPath: Paths.canonical(path))) != nil {
        fail("a daemon is serving \(path); stop it first (keychainfs stop)")
    }
    let pass = readPassphraseLine()
    let started = monotonic()
    do {
        let vault = try Vault.open(at: path, deviceKey: try DeviceKey.loadOrCreate())
        try vault.unlock(passphrase: pass)
        pass.wipe()
        var done = 0
        var inAddAll = 0.0
        while done < o.count {
            let n = min(o.batch, o.count - done)
            var batch: [(attributes: Attributes, secret: SecureBytes?)] = []
            batch.reserveCapacity(n)
            for i in done..<(done + n) {
                let service = o.perService > 0 ? o.service + String(i / o.perService) : o.service
                batch.append((["class": "genp", "svce": .string(service), "acct": .string(o.prefix + String(i)),
                               "pdmn": "ak"], fillSecret(i)))
            }
            let t0 = monotonic()
            try vault.addAll(batch, accessGroups: [o.group])
            inAddAll += monotonic() - t0
            done += n
            batch.removeAll()
            emit("fill: \(grouped(done)) / \(grouped(o.count))", fd: 2)
        }
        vault.lock()
        let total = monotonic() - started
        emit("fill_items=\(o.count) fill_seconds=\(plain(total, 3)) fill_addall_seconds=\(plain(inAddAll, 3)) "
             + "fill_rate=\(plain(Double(o.count) / inAddAll, 0))")
    } catch {
        fail("fill failed: \(describe(error))")
    }
}

// MARK: socket

let socketUsage = """
    usage: keychainfs-bench socket --vault PATH --service S (--account A | --accounts N [--prefix P])
                                   [--clients C] [--seconds T]

    C threads (default 1), each with its own connection to the vault's running daemon, send
    copyMatching requests with r_Data for S/A (or S/P<random below N>) for T seconds (default 3)
    and check that each answer holds a secret. Prints lookups per second and per-request latency.
    """

/// One client thread's work and results; written by its thread only, read after the join.
final class SocketWorker: @unchecked Sendable {
    let vault: String
    let service: String
    let account: String?
    let accounts: Int
    let prefix: String
    let start: Double
    let end: Double
    let seed: UInt64
    var ops = 0
    var errors = 0
    var firstError: String?
    var latencies: [Double] = []

    init(vault: String, options o: ModeOptions, start: Double, seed: UInt64) {
        self.vault = vault
        self.service = o.service
        self.account = o.account
        self.accounts = o.accounts
        self.prefix = o.prefix
        self.start = start
        self.end = start + o.seconds
        self.seed = seed
    }

    func run() {
        let client: DaemonClient
        do { client = try DaemonClient.connect(vaultPath: vault) } catch {
            errors += 1
            firstError = "connect: \(describe(error))"
            return
        }
        var rng = SplitMix64(state: seed)
        // Prebuilt queries, so the loop measures the request, not string building.
        let fixedQuery: Attributes? = account.map {
            ["class": "genp", "svce": .string(service), "acct": .string($0), "r_Data": true]
        }
        latencies.reserveCapacity(200_000)
        while monotonic() < start { usleep(200) }
        while true {
            let query = fixedQuery
                ?? ["class": "genp", "svce": .string(service), "acct": .string(prefix + String(rng.below(accounts))), "r_Data": true]
            let t0 = monotonic()
            if t0 >= end { break }
            do {
                let r = try client.send(Request(.copyMatching, query: query))
                let t1 = monotonic()
                if let d = r.result.value?.data, d.count > 0 {
                    ops += 1
                    latencies.append(t1 - t0)
                } else {
                    errors += 1
                    if firstError == nil { firstError = "no data in the answer" }
                }
            } catch {
                errors += 1
                if firstError == nil { firstError = describe(error) }
                if errors > 100 { break }
            }
        }
    }
}

func startJoinableThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box: @unchecked Sendable { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
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
    let start = monotonic() + 0.3
    let workers = (0..<o.clients).map { SocketWorker(vault: vault, options: o, start: start, seed: 0x5EED &+ UInt64($0)) }
    let threads = workers.map { w in startJoinableThread { w.run() } }
    for t in threads { pthread_join(t, nil) }
    let ops = workers.reduce(0) { $0 + $1.ops }
    let errors = workers.reduce(0) { $0 + $1.errors }
    let all = workers.flatMap(\.latencies).sorted()
    if let e = workers.compactMap(\.firstError).first { emit("keychainfs-bench socket: \(errors) errors, first: \(e)", fd: 2) }
    emit("clients=\(o.clients) seconds=\(plain(o.seconds, 1)) ops=\(ops) errors=\(errors) "
         + "rate=\(plain(Double(ops) / o.seconds, 0)) median_us=\(plain(percentile(all, 50) * 1e6, 1)) "
         + "p90_us=\(plain(percentile(all, 90) * 1e6, 1))")
    if ops == 0 || errors > 0 { exit(1) }
}
