import Glibc
import KeychainCore
import KeychainCrypto
import KeychainSync
import Synchronization

/// `keychainfs-bench sync-newhost --server CONNINFO --dir DIR [--items N] [--fill-only]
/// [--batch B] [--cache-mib M] [--read-batch N]`, for bench/sync.sh --new-host: a new host's first sync of a log of N items,
/// both hosts in this process, the server's log filled fast with real records.
///
/// - The writer (`DIR/writer.vault`, made on the first run, with `DIR/device.key`): a member
///   of a circle on the server (`sync init`), filled with N synchronizable generic passwords
///   through `Vault.addAll` in batches of B (20,000), its engine pushing after each batch: the
///   same sealed, signed records a daemon sends. A second member (`DIR/holder.vault`) that
///   reads nothing holds pruning back, as in bench/sync.sh. A later run with the same DIR
///   finds the writer filled and only joins.
/// - The new host (`DIR/new.vault`, made again each run): joins, the writer approves, and its
///   first rounds read the whole log. Timed from the round after the grant until it has
///   pulled every entry, with the CPU time of this process meanwhile (the writer is idle),
///   the engine's work alone: no daemon, no audit line per entry.
/// - `--copy FILE`: the fill writes the records to FILE for `\copy` instead of pushing them
///   (`writeCopyRows`). `--approve CODE`: the filled writer approves another host (a daemon's
///   `sync join`), and nothing more: bench/sync.sh then times that daemon's first sync.
/// - `--cache-mib M`: the new host's write cache during its long read
///   (`SyncEngine.longReadCacheMiB`, 256); `--read-batch N`: entries per vault transaction
///   (`SyncEngine.longReadBatch`, 16,384).
/// Prints `key=value` on one line: `newhost_items=`, `newhost_s=`, `newhost_rate=`,
/// `newhost_cpu_s=`, `newhost_cpu_ms_per_1000=`, `newhost_held=`; with the fill, `fill_s=`.
func syncNewHostMode(_ args: [String]) {
    let usage = "usage: keychainfs-bench sync-newhost --server CONNINFO --dir DIR [--items N] [--batch B] [--fill-only] [--copy FILE] [--approve CODE] [--cache-mib M] [--read-batch N]"
    var conninfo = "", dir = "", items = 100_000, batch = 20_000, fillOnly = false
    var copyFile: String?, approve: String?
    let c = ArgumentCursor(args, from: 0, usage: usage)
    while let a = c.current {
        switch a {
        case "--server": conninfo = c.value(a)
        case "--dir": dir = c.value(a)
        case "--items": items = c.positive(a)
        case "--batch": batch = c.positive(a)
        case "--fill-only": fillOnly = true
        case "--copy": copyFile = c.value(a)
        case "--approve": approve = c.value(a)
        case "--cache-mib": SyncEngine.longReadCacheMiB.store(c.positive(a), ordering: .relaxed)
        case "--read-batch": SyncEngine.longReadBatch.store(c.positive(a), ordering: .relaxed)
        default: fail("sync-newhost: unknown option \(a)\n\n" + usage)
        }
        c.advance()
    }
    guard !conninfo.isEmpty, !dir.isEmpty else { fail(usage) }
    let groups = ["bench.keychainfs"]
    let started = monotonic()
    let log: @Sendable (String) -> Void = { emit("sync-newhost: [\(plain(monotonic() - started, 2)) s] " + $0, fd: 2) }
    var out = ""
    do {
        let device = try DeviceKey.loadOrCreate(at: dir + "/device.key")
        let pass = try SecureBytes(copying: Array("keychainfs new host bench".utf8))
        defer { pass.wipe() }
        let writerPath = dir + "/writer.vault"
        let writerVault: Vault
        let filled = exists(writerPath)
        if filled {
            writerVault = try Vault.open(at: writerPath, deviceKey: device)
            try writerVault.unlock(passphrase: pass)
        } else {
            writerVault = try Vault.create(at: writerPath, passphrase: pass, kdf: .minimum, deviceKey: device)
        }
        let writer = SyncEngine(vault: writerVault, log: log, onApplied: { _, _ in })
        defer { writer.disconnect() }
        if !filled {
            _ = try writer.initCircle(conninfo: conninfo, name: "writer")
            // A member that reads nothing after joining holds the log's pruning back, as the
            // hosts of bench/sync.sh do: the new host reads the log, not a full resync.
            let holderVault = try Vault.create(at: dir + "/holder.vault", passphrase: pass, kdf: .minimum, deviceKey: device)
            let holder = SyncEngine(vault: holderVault, log: log, onApplied: { _, _ in })
            _ = try writer.approve(code: try holder.join(conninfo: conninfo, name: "holder"))
            holder.step()
            holder.disconnect()
            let t0 = monotonic()
            var done = 0
            while done < items {
                let n = min(batch, items - done)
                var chunk: [(attributes: Attributes, secret: SecureBytes?)] = []
                chunk.reserveCapacity(n)
                for i in done..<(done + n) {
                    chunk.append(([.class: .itemClass(.genericPassword), .service: .string("sync-bench"),
                                   .account: .string("n\(i)"), .synchronizable: .bool(true)],
                                  try SecureBytes(copying: Array("sync bench secret n\(i)".utf8))))
                }
                try writerVault.addAll(chunk, accessGroups: groups)
                for s in chunk { s.secret?.wipe() }
                if let copyFile {
                    try writeCopyRows(writerVault, engine: writer, to: copyFile, firstSeq: Int64(done) + 1)
                } else {
                    writer.step()
                }
                done += n
                let st = writer.status()
                if let e = st["last-error"] { fail("sync-newhost: the writer's round: \(e)") }
                emit("sync-newhost: filled and pushed \(grouped(done)) of \(grouped(items)), "
                     + "\(rate(Double(done) / (monotonic() - t0)))/s", fd: 2)
            }
            out += "fill=\(items) fill_s=\(plain(monotonic() - t0, 1)) "
        }
        if fillOnly { emit(out + "filled=1"); return }
        if let approve {
            emit("approved=\(try writer.approve(code: approve))")
            return
        }

        let newPath = dir + "/new.vault"
        for suffix in ["", "-wal", "-shm"] { unlink(newPath + suffix) }
        let newVault = try Vault.create(at: newPath, passphrase: pass, kdf: .minimum, deviceKey: device)
        let held = Counter()
        let newHost = SyncEngine(vault: newVault, log: log, onApplied: { _, _ in held.add() })
        defer { newHost.disconnect() }
        let code = try newHost.join(conninfo: conninfo, name: "new")
        _ = try writer.approve(code: code)
        newHost.step()  // takes the grant
        guard newHost.status()["state"] == .string("member") else { fail("sync-newhost: the new host did not become a member") }
        let cpu0 = cpuSeconds(), t0 = monotonic()
        var pulled = 0
        repeat {
            newHost.step()
            if let e = newHost.status()["last-error"] { fail("sync-newhost: the new host's round: \(e)") }
            if case .number(let n)? = newHost.status()["pulled"] { pulled = Int(n) }
        } while pulled < items && monotonic() - t0 < 3600
        let wall = monotonic() - t0, cpu = cpuSeconds() - cpu0
        log("the new host pulled \(pulled) entries")
        out += "newhost_items=\(pulled) newhost_s=\(plain(wall, 2)) "
        out += "newhost_rate=\(plain(Double(pulled) / wall, 0)) newhost_cpu_s=\(plain(cpu, 2)) "
        out += "newhost_cpu_ms_per_1000=\(plain(cpu / Double(max(pulled, 1)) * 1_000_000, 1)) newhost_held=\(held.value)"
        for suffix in ["", "-wal", "-shm"] { unlink(newPath + suffix) }
    } catch {
        fail("sync-newhost: \(error)")
    }
    emit(out)
}

/// `--copy FILE`: the writer's unsent items sealed and signed as its engine would send them
/// (`SyncRecord.seal`, version 1, with its host and circle keys), appended to FILE as rows of
/// `keychainfs.log` in COPY's text format (`circle, seq, token, version, deleted, record`)
/// from log position `firstSeq` on, and recorded as sent. The caller loads FILE with
/// `\copy`, fills `items` from it and moves the circle's counter past it (bench/sync.sh):
/// thousands of records a second, where the engine's pushes (a savepoint and four statements
/// per version) make hundreds.
func writeCopyRows(_ vault: Vault, engine: SyncEngine, to path: String, firstSeq: Int64) throws {
    let status = engine.status()
    guard case .string(let circleHex)? = status["circle"], let circleID = Hex.decode(circleHex),
          case .number(let epoch)? = status["epoch"],
          let hostSecret = try vault.syncSecret("host"), let circleSecret = try vault.syncSecret("circle")
    else { throw SyncError.notMember }
    let host = try HostKeys.parse(hostSecret)
    hostSecret.wipe()
    let circle = try CircleKeys.parse(circleID: circleID, epoch: UInt32(epoch), secrets: circleSecret)
    circleSecret.wipe()
    defer { host.wipe(); circle.wipe() }
    guard let file = fopen(path, "a") else { throw SyncError.server("cannot open \(path)") }
    defer { fclose(file) }
    var seq = firstSeq
    var sent: [(uuid: [UInt8], state: SyncItemState?)] = []
    let prefix = Array("\\\\x".utf8) + Array(circleHex.utf8)
    for (uuid, version, _) in try vault.syncChanges().changed {
        guard let payload = try vault.syncPayload(uuid: uuid) else { continue }
        defer { payload.wipe() }
        let record = try SyncRecord.seal(payload, uuid: uuid, version: 1, circle: circle, writer: host)
        var line = prefix
        line += Array("\t\(seq)\t\\\\x".utf8)
        Hex.append(circle.token(of: uuid), to: &line)
        line += Array("\t1\tf\t\\\\x".utf8)
        Hex.append(record, to: &line)
        line.append(UInt8(ascii: "\n"))
        guard fwrite(line, 1, line.count, file) == line.count else { throw SyncError.server("cannot write \(path)") }
        sent.append((uuid, SyncItemState(localVersion: version, serverVersion: 1)))
        seq += 1
    }
    try vault.setSyncStates(sent)
    try vault.pruneSyncChanges()
}

/// User and system CPU time of this process so far, in seconds.
func cpuSeconds() -> Double {
    var u = rusage()
    getrusage(RUSAGE_SELF.rawValue, &u)
    return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6
}

/// A count the engine's callback adds to.
private final class Counter: Sendable {
    private let n = Atomic<Int>(0)
    func add() { n.add(1, ordering: .relaxed) }
    var value: Int { n.load(ordering: .relaxed) }
}
