// keychainfs-bench: in-process benchmark of KeychainCore (PRODUCT 10).
//
// For each vault size N it creates a vault, fills it with N generic passwords through
// `Vault.addAll` in batches, and measures batched and single adds, primary-key lookups (hits
// and misses), unlock / lock after a reopen, passphrase changes and bytes on disk per item.
// It asserts nothing about timings; it prints figures. Build and run in release:
//
//   swift build -c release --product keychainfs-bench
//   .build/release/keychainfs-bench --quick
import Glibc
import KeychainCore
import KeychainCrypto

// MARK: Output (unbuffered, so progress lines appear at once and in order)

func emit(_ line: String = "", fd: Int32 = 1) {
    var s = line + "\n"
    s.withUTF8 { buf in
        var off = 0
        while off < buf.count {
            let n = write(fd, buf.baseAddress! + off, buf.count - off)
            if n <= 0 { break }
            off += n
        }
    }
}

func fail(_ message: String) -> Never {
    emit("keychainfs-bench: " + message, fd: 2)
    exit(2)
}

// MARK: Formatting without Foundation

func fixed(_ x: Double, _ decimals: Int) -> String {
    guard x.isFinite else { return "-" }
    var scale: Int64 = 1
    for _ in 0..<decimals { scale *= 10 }
    let negative = x < 0
    let r = Int64((abs(x) * Double(scale)).rounded())
    let whole = r / scale, frac = r % scale
    var s = grouped(whole)
    if decimals > 0 {
        let f = String(frac)
        s += "." + String(repeating: "0", count: decimals - f.count) + f
    }
    return negative ? "-" + s : s
}

func grouped(_ n: Int64) -> String {
    let digits = Array(String(n))
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return out
}

func grouped(_ n: Int) -> String { grouped(Int64(n)) }

/// A rate with sensible precision.
func rate(_ x: Double) -> String { x >= 100 ? fixed(x, 0) : fixed(x, 1) }

/// Milliseconds with sensible precision.
func ms(_ seconds: Double) -> String {
    let m = seconds * 1000
    return m >= 100 ? fixed(m, 0) : m >= 1 ? fixed(m, 1) : fixed(m, 4)
}

func pad(_ s: String, _ width: Int, left: Bool = false) -> String {
    let n = s.count
    guard n < width else { return s }
    return left ? s + String(repeating: " ", count: width - n) : String(repeating: " ", count: width - n) + s
}

func mib(_ bytes: Int64) -> String { fixed(Double(bytes) / 1_048_576, 1) + " MiB" }

// MARK: Timing, files, randomness

func monotonic() -> Double { monotonicSeconds() }

@discardableResult
func timed<R>(_ body: () throws -> R) rethrows -> (R, Double) {
    let t0 = monotonic()
    let r = try body()
    return (r, monotonic() - t0)
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

func fileSize(_ path: String) -> Int64 {
    var st = stat()
    return stat(path, &st) == 0 ? Int64(st.st_size) : 0
}

func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

/// Resident set size in bytes, from /proc/self/statm.
func residentBytes() -> Int64 {
    guard let f = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(f) }
    var buf = [CChar](repeating: 0, count: 128)
    guard fgets(&buf, Int32(buf.count), f) != nil else { return 0 }
    let fields = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }.split(separator: " ")
    guard fields.count >= 2, let resident = Int64(fields[1]) else { return 0 }
    return resident * Int64(sysconf(Int32(_SC_PAGESIZE)))
}

/// SplitMix64: fast, deterministic, good enough for sampling and test secrets.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

// MARK: The items

let secretLength = 32
let accessGroups = ["bench.keychainfs"]

func service(_ i: Int) -> String { "svc.\(i)" }
func account(_ i: Int) -> String { "user\(i)@bench" }

/// The 32 secret bytes of item `i`: derived from its index, so lookups can be checked.
func expectedSecret(_ i: Int, tag: UInt64) -> [UInt8] {
    var g = SplitMix64(state: UInt64(truncatingIfNeeded: i) &* 0x2545_F491_4F6C_DD1D ^ tag)
    var out: [UInt8] = []
    out.reserveCapacity(secretLength)
    for _ in 0..<(secretLength / 8) {
        var w = g.next()
        for _ in 0..<8 { out.append(UInt8(truncatingIfNeeded: w)); w >>= 8 }
    }
    return out
}

func secret(_ i: Int, tag: UInt64) throws -> SecureBytes {
    var bytes = expectedSecret(i, tag: tag)
    defer { wipeBytes(&bytes) }
    return try SecureBytes(copying: bytes)
}

func item(_ i: Int) -> Attributes {
    [.class: .itemClass(.genericPassword), .service: .string(service(i)), .account: .string(account(i)), .accessible: .protection(.whenUnlocked)]
}

let fillTag: UInt64 = 0xF111
let singleTag: UInt64 = 0x5111

// MARK: Options

struct Options {
    var sizes = [1_000, 100_000, 1_000_000]
    var kdf = KDFParameters.interactive
    var kdfName = "interactive"
    var dir: String?
    var keep = false
    var batch = 10_000
    var singles = 200
    var lookups = 10_000
    var misses = 2_000
    var seed: UInt64 = 0x6B63_6673_6265_6E63
}

let usage = """
    usage: keychainfs-bench [options]
           keychainfs-bench fill --help      (fill a vault file for bench/run.sh)
           keychainfs-bench finds --help     (in-process lookups from 1, 2, 8 ... threads)
           keychainfs-bench socket --help    (lookups per second through a running daemon)
           keychainfs-bench idle --help      (hold many idle connections to a running daemon)

    Fills a vault to each size N with generic passwords (Vault.addAll, in batches) and reports:
    batched and single-add throughput, find-by-primary-key rates (hits with r_Data, misses),
    unlock / lock time after a reopen, passphrase-change time and bytes on disk per item.

    options:
      --sizes N,N,...   vault sizes (default 1000,100000,1000000)
      --quick           same as --sizes 1000,10000
      --kdf NAME        Argon2id cost: interactive (default), moderate, sensitive, minimum,
                        or OPS:MEMBYTES (for example 2:67108864)
      --dir PATH        where the vaults and the device key go (default: a fresh
                        /var/tmp/keychainfs-bench.XXXXXX); created when missing
      --keep            keep the vaults, the device key and the directory
      --batch N         items per addAll call (default 10000)
      --singles N       single durable adds per size (default 200)
      --lookups N       hit lookups per size, capped at N items (default 10000)
      --misses N        miss lookups per size (default 2000)
      --seed N          seed for the lookup samples
      --help            this text

    Build with -c release; debug builds are several times slower.
    """

func parseOptions(_ args: [String]) -> Options {
    var o = Options()
    let c = ArgumentCursor(args, from: 1, usage: usage)
    while let a = c.current {
        switch a {
        case "--help", "-h":
            emit(usage)
            exit(0)
        case "--quick":
            o.sizes = [1_000, 10_000]
        case "--sizes":
            let list = c.value(a).split(separator: ",").map { $0.filter { $0 != "_" } }
            let sizes = list.compactMap { Int($0) }
            guard !sizes.isEmpty, sizes.count == list.count, sizes.allSatisfy({ $0 > 0 }) else {
                fail("--sizes: expected positive integers separated by commas, got \(c.args[c.index])")
            }
            o.sizes = sizes
        case "--kdf":
            let v = c.value(a)
            if let p = KDFParameters(presetName: v) {
                o.kdf = p
                o.kdfName = v
            } else if v == "minimum" || v == "min" {
                o.kdf = .minimum
                o.kdfName = "minimum"
            } else {
                let parts = v.split(separator: ":")
                guard parts.count == 2, let ops = UInt64(parts[0]), let mem = UInt64(parts[1]) else {
                    fail("--kdf: expected interactive, moderate, sensitive, minimum or OPS:MEMBYTES, got \(v)")
                }
                o.kdf = KDFParameters(opsLimit: ops, memLimit: mem)
                o.kdfName = "custom"
                guard o.kdf.isValid else { fail("--kdf: libsodium does not accept \(v)") }
            }
        case "--dir": o.dir = c.value(a)
        case "--keep": o.keep = true
        case "--batch": o.batch = c.positive(a)
        case "--singles": o.singles = c.positive(a)
        case "--lookups": o.lookups = c.positive(a)
        case "--misses": o.misses = c.positive(a)
        case "--seed":
            guard let s = UInt64(c.value(a)) else { fail("--seed: not an unsigned integer") }
            o.seed = s
        default:
            fail("unknown option \(a)\n\n" + usage)
        }
        c.advance()
    }
    return o
}

// MARK: One size

struct Row {
    var n: Int
    var createSeconds = 0.0
    var fillSeconds = 0.0          // inside addAll only
    var fillTotalSeconds = 0.0     // including building the batches
    var singleRate = 0.0
    var findRate = 0.0
    var missRate = 0.0
    var openSeconds = 0.0
    var unlock = 0.0
    var lock = 0.0
    var passwd = 0.0
    var fileBytes: Int64 = 0       // vault file after close (WAL checkpointed)
    var walBytes: Int64 = 0        // -wal after close (normally gone)
    var liveBytes: Int64 = 0       // file + -wal before close
    var fillRate: Double { Double(n) / fillSeconds }
    var bytesPerItem: Double { Double(fileBytes + walBytes) / Double(n) }
}

func passphrase(_ s: String) throws -> SecureBytes { try SecureBytes(copying: Array(s.utf8)) }

func describe(_ error: any Error) -> String {
    if let s = error as? KeychainStatus { return "\(s.message) (\(s.rawValue))" }
    return "\(error)"
}

func runSize(_ n: Int, options o: Options, dir: String, device: DeviceKey, rng: inout SplitMix64) throws -> Row {
    var row = Row(n: n)
    let path = dir + "/bench-\(n).vault"
    for suffix in ["", "-wal", "-shm"] where exists(path + suffix) {
        fail("\(path + suffix) already exists; remove it or use another --dir")
    }
    let passA = try passphrase("correct horse battery staple A")
    let passB = try passphrase("correct horse battery staple B")

    emit("\n== N = \(grouped(n)) items  (\(path))")

    // Create (one Argon2id derivation) and fill.
    var vault: Vault? = nil
    (vault, row.createSeconds) = try timed {
        try Vault.create(at: path, passphrase: passA, kdf: o.kdf, deviceKey: device)
    }
    emit("  create:        \(ms(row.createSeconds)) ms")

    let fillStart = monotonic()
    var inAddAll = 0.0
    var done = 0
    var nextReport = 100_000
    while done < n {
        let count = min(o.batch, n - done)
        var batch: [(attributes: Attributes, secret: SecureBytes?)] = []
        batch.reserveCapacity(count)
        for i in done..<(done + count) { batch.append((item(i), try secret(i, tag: fillTag))) }
        let (_, t) = try timed { try vault!.addAll(batch, accessGroups: accessGroups) }
        inAddAll += t
        done += count
        batch.removeAll()  // frees the batch's guarded buffers before the next one is built
        if done >= nextReport && done < n {
            let elapsed = monotonic() - fillStart
            let eta = elapsed / Double(done) * Double(n - done)
            emit("  fill progress: \(grouped(done)) / \(grouped(n)), \(rate(Double(done) / inAddAll)) items/s in addAll, "
                 + "elapsed \(fixed(elapsed, 0)) s, eta \(fixed(eta, 0)) s, rss \(mib(residentBytes()))")
            while nextReport <= done { nextReport += 100_000 }
        }
    }
    row.fillSeconds = inAddAll
    row.fillTotalSeconds = monotonic() - fillStart
    emit("  fill:          \(grouped(n)) items in \(fixed(row.fillTotalSeconds, 2)) s "
         + "(\(fixed(inAddAll, 2)) s in addAll): \(rate(row.fillRate)) items/s in addAll, "
         + "\(rate(Double(n) / row.fillTotalSeconds)) items/s including building batches; "
         + "batch \(grouped(o.batch)), rss \(mib(residentBytes()))")

    // Size on disk: live, then after closing (the last connection checkpoints and removes the WAL).
    row.liveBytes = fileSize(path) + fileSize(path + "-wal")
    emit("  on disk live:  file \(mib(fileSize(path))) + wal \(mib(fileSize(path + "-wal")))")
    vault = nil
    row.fileBytes = fileSize(path)
    row.walBytes = fileSize(path + "-wal")
    emit("  after close:   file \(mib(row.fileBytes)) + wal \(mib(row.walBytes)) = "
         + "\(fixed(row.bytesPerItem, 1)) bytes/item")

    // Reopen, then unlock / lock three times each.
    (vault, row.openSeconds) = try timed { try Vault.open(at: path, deviceKey: device) }
    guard let v = vault else { fail("open returned nothing") }
    v.keepsReadSnapshots = true  // as the daemon runs its vault: this process alone writes it
    var unlocks: [Double] = [], locks: [Double] = []
    for _ in 0..<3 {
        unlocks.append(try timed { try v.unlock(passphrase: passA) }.1)
        locks.append(timed { v.lock() }.1)
    }
    try v.unlock(passphrase: passA)
    row.unlock = median(unlocks)
    row.lock = median(locks)
    emit("  open:          \(ms(row.openSeconds)) ms; unlock \(unlocks.map { ms($0) }.joined(separator: ", ")) ms "
         + "(median \(ms(row.unlock))); lock \(locks.map { ms($0) }.joined(separator: ", ")) ms")

    // Single adds: one durable transaction each.
    let (_, singleSeconds) = try timed {
        for j in 0..<o.singles {
            let i = n + j
            try v.add(item(i), secret: secret(i, tag: singleTag), accessGroups: accessGroups)
        }
    }
    row.singleRate = Double(o.singles) / singleSeconds
    emit("  single add:    \(o.singles) adds in \(fixed(singleSeconds * 1000, 1)) ms: \(rate(row.singleRate)) adds/s, "
         + "\(ms(singleSeconds / Double(o.singles))) ms each")

    // Hits: random existing (svce, acct) from the batched fill, with r_Data; secrets checked.
    let lookups = min(o.lookups, n)
    let sample = (0..<lookups).map { _ in rng.below(n) }
    var wrong = 0, errors = 0
    var firstError: String?
    let (_, findSeconds) = timed {
        for i in sample {
            do {
                let r = try v.copyMatching([.class: .itemClass(.genericPassword), .service: .string(service(i)), .account: .string(account(i)),
                                            .returnData: true], accessGroups: accessGroups)
                guard let data = r.value?.data else { wrong += 1; continue }
                let ok = data.withUnsafeBytes { Array($0) == expectedSecret(i, tag: fillTag) }
                if !ok { wrong += 1 }
            } catch {
                errors += 1
                if firstError == nil { firstError = describe(error) }
            }
        }
    }
    row.findRate = Double(lookups) / findSeconds
    emit("  find (hit):    \(grouped(lookups)) lookups in \(fixed(findSeconds * 1000, 1)) ms: "
         + "\(rate(row.findRate)) finds/s, \(fixed(findSeconds / Double(lookups) * 1e6, 1)) us each"
         + (wrong + errors > 0 ? "  !! \(wrong) wrong secrets, \(errors) errors (first: \(firstError ?? "-"))" : ""))

    // Misses: an existing service with an account that does not exist -> errSecItemNotFound.
    var notFound = 0, unexpected = 0
    var firstUnexpected: String?
    let missSample = (0..<o.misses).map { _ in rng.below(n) }
    let (_, missSeconds) = timed {
        for (k, i) in missSample.enumerated() {
            do {
                _ = try v.copyMatching([.class: .itemClass(.genericPassword), .service: .string(service(i)), .account: .string("nobody\(k)@bench"),
                                        .returnData: true], accessGroups: accessGroups)
                unexpected += 1
                if firstUnexpected == nil { firstUnexpected = "found an item" }
            } catch let s as KeychainStatus where s == .itemNotFound {
                notFound += 1
            } catch {
                unexpected += 1
                if firstUnexpected == nil { firstUnexpected = describe(error) }
            }
        }
    }
    row.missRate = Double(o.misses) / missSeconds
    emit("  find (miss):   \(grouped(o.misses)) lookups in \(fixed(missSeconds * 1000, 1)) ms: "
         + "\(rate(row.missRate)) misses/s, \(fixed(missSeconds / Double(o.misses) * 1e6, 1)) us each"
         + (unexpected > 0 ? "  !! \(unexpected) not errSecItemNotFound (first: \(firstUnexpected ?? "-"))" : ""))

    // Passphrase changes, alternating A -> B -> A -> B.
    var changes: [Double] = []
    var current = passA, other = passB
    for _ in 0..<3 {
        let (old, new) = (current, other)
        changes.append(try timed { try v.changePassphrase(from: old, to: new) }.1)
        swap(&current, &other)
    }
    row.passwd = median(changes)
    emit("  passwd change: \(changes.map { ms($0) }.joined(separator: ", ")) ms (median \(ms(row.passwd)))")

    let info = try v.info()
    let expected = n + o.singles
    emit("  items in vault: \(grouped(info.itemCount))" + (info.itemCount == expected ? "" : "  !! expected \(grouped(expected))"))
    vault = nil
    return row
}

// MARK: Main

func printTable(_ rows: [Row], options o: Options) {
    let headers = ["items", "fill add/s", "single add/s", "find/s", "miss/s", "unlock ms", "lock ms",
                   "passwd-change ms", "bytes/item"]
    let cells: [[String]] = rows.map { r in
        [grouped(r.n), rate(r.fillRate), rate(r.singleRate), rate(r.findRate), rate(r.missRate),
         ms(r.unlock), ms(r.lock), ms(r.passwd), fixed(r.bytesPerItem, 1)]
    }
    var widths = headers.map(\.count)
    for c in cells { for (i, s) in c.enumerated() { widths[i] = max(widths[i], s.count) } }
    func line(_ c: [String]) -> String {
        "| " + c.enumerated().map { pad($0.element, widths[$0.offset]) }.joined(separator: " | ") + " |"
    }
    emit(line(headers))
    emit("|" + widths.map { String(repeating: "-", count: $0 + 1) + ":" }.joined(separator: "|") + "|")
    for c in cells { emit(line(c)) }

    guard let base = rows.min(by: { $0.n < $1.n }) else { return }
    emit("\nRelative to N = \(grouped(base.n)) (should stay near 1.0x: both cost one or two Argon2id derivations, not per item):")
    let rh = ["items", "unlock", "passwd-change"]
    let rc = rows.map { r in [grouped(r.n), fixed(r.unlock / base.unlock, 2) + "x", fixed(r.passwd / base.passwd, 2) + "x"] }
    var rw = rh.map(\.count)
    for c in rc { for (i, s) in c.enumerated() { rw[i] = max(rw[i], s.count) } }
    emit("| " + rh.enumerated().map { pad($0.element, rw[$0.offset]) }.joined(separator: " | ") + " |")
    emit("|" + rw.map { String(repeating: "-", count: $0 + 1) + ":" }.joined(separator: "|") + "|")
    for c in rc { emit("| " + c.enumerated().map { pad($0.element, rw[$0.offset]) }.joined(separator: " | ") + " |") }
}

func run() {
    let o = parseOptions(CommandLine.arguments)
    let started = monotonic()

    // The directory: given, or a fresh one under /var/tmp.
    var createdDir = false
    let dir: String
    if let d = o.dir {
        if !exists(d) {
            guard mkdir(d, 0o700) == 0 else { fail("cannot create \(d): errno \(errno)") }
            createdDir = true
        }
        dir = d
    } else {
        var template = Array("/var/tmp/keychainfs-bench.XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            fail("mkdtemp under /var/tmp failed: errno \(errno)")
        }
        dir = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        createdDir = true
    }
    let devicePath = dir + "/device.key"
    let deviceExisted = exists(devicePath)

    emit("keychainfs-bench")
    emit("  sizes:    \(o.sizes.map { grouped($0) }.joined(separator: ", "))")
    emit("  Argon2id: \(o.kdfName): opslimit \(o.kdf.opsLimit), memlimit \(grouped(Int64(o.kdf.memLimit))) bytes "
         + "(\(fixed(Double(o.kdf.memLimit) / 1_048_576, 0)) MiB), alg argon2id13")
    emit("  items:    genp, distinct svce/acct each, pdmn ak, \(secretLength)-byte secrets; addAll batch \(grouped(o.batch))")
    emit("  per size: \(o.singles) single adds, min(\(grouped(o.lookups)), N) hit lookups with r_Data (with replacement), "
         + "\(grouped(o.misses)) misses")
    emit("  dir:      \(dir)\(o.keep ? " (kept)" : "")")

    var rows: [Row] = []
    var vaultPaths: [String] = []
    do {
        let device = try DeviceKey.loadOrCreate(at: devicePath)
        var rng = SplitMix64(state: o.seed)
        for n in o.sizes {
            let path = dir + "/bench-\(n).vault"
            vaultPaths.append(path)
            rows.append(try runSize(n, options: o, dir: dir, device: device, rng: &rng))
            if !o.keep { for s in ["", "-wal", "-shm"] { unlink(path + s) } }
        }
    } catch {
        emit("keychainfs-bench: failed: \(describe(error))", fd: 2)
    }

    if !rows.isEmpty {
        emit("\nResults (release build; rates in operations per second; unlock/lock/passwd-change are medians of 3;")
        emit(" fill add/s counts time inside addAll only; bytes/item = (vault file + -wal after close) / N)")
        emit("Argon2id \(o.kdfName): opslimit \(o.kdf.opsLimit), memlimit \(grouped(Int64(o.kdf.memLimit))) bytes\n")
        printTable(rows, options: o)
    }

    if !o.keep {
        for p in vaultPaths { for s in ["", "-wal", "-shm"] { unlink(p + s) } }
        if !deviceExisted { unlink(devicePath) }
        if createdDir { rmdir(dir) }
    }
    emit("\nTotal run time: \(fixed(monotonic() - started, 1)) s")
    if rows.count < o.sizes.count { exit(1) }
}

// Modes for bench/run.sh (Modes.swift); without one, the in-process benchmark above.
switch CommandLine.arguments.dropFirst().first {
case "fill": fillMode(Array(CommandLine.arguments.dropFirst(2)))
case "finds": findsMode(Array(CommandLine.arguments.dropFirst(2)))
case "socket": socketMode(Array(CommandLine.arguments.dropFirst(2)))
case "secitem": secitemMode(Array(CommandLine.arguments.dropFirst(2)))
case "seckey": seckeyMode(Array(CommandLine.arguments.dropFirst(2)))
case "seckey-rsa": seckeyRSAMode(Array(CommandLine.arguments.dropFirst(2)))
case "idle": idleMode(Array(CommandLine.arguments.dropFirst(2)))
case "sync": syncMode(Array(CommandLine.arguments.dropFirst(2)))
case "sync-fleet": syncFleetMode(Array(CommandLine.arguments.dropFirst(2)))
case "sync-newhost": syncNewHostMode(Array(CommandLine.arguments.dropFirst(2)))
case "commoncrypto": commonCryptoMode(Array(CommandLine.arguments.dropFirst(2)))
default: run()
}
