import Foundation
import KeychainProtocol
import KeychainTestSupport
import XCTest

/// Issue 7: SIGKILL the daemon at random moments while clients add, update and delete items;
/// after a restart every acknowledged write is there and nothing is half written.
final class HardeningCrashTests: HarnessTestCase {
    // Each test makes its own vault files; other processes reach the daemon root starts.
    override class var createsVault: Bool { false }
    override class var sharesRuntimeDirectory: Bool { true }

    /// What the vault may hold for one key: each possibility is a secret or nil (absent).
    /// Acknowledged writes make it one value; a write whose answer was lost adds its value.
    final class Model: @unchecked Sendable {
        private let lock = NSLock()
        private var possible: [String: [String?]] = [:]
        private(set) var log: [String] = []

        func set(_ key: String, _ values: [String?]) { lock.lock(); possible[key] = values; lock.unlock() }
        func get(_ key: String) -> [String?] { lock.lock(); defer { lock.unlock() }; return possible[key] ?? [nil] }
        func note(_ s: String) { lock.lock(); log.append(s); lock.unlock() }
        var keys: [String] { lock.lock(); defer { lock.unlock() }; return possible.keys.sorted() }
    }

    final class Stats: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var acknowledged = 0, failed = 0
        private(set) var statuses: [Int32: Int] = [:]
        func count(_ status: Int32, acknowledged ok: Bool) {
            lock.lock()
            if ok { acknowledged += 1 } else { failed += 1 }
            statuses[status, default: 0] += 1
            lock.unlock()
        }
    }

    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.lock(); value = true; lock.unlock() }
        var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    }

    func testAcknowledgedWritesSurviveSIGKILL() throws {
        signal(SIGPIPE, SIG_IGN)
        let rounds = Int(ProcessInfo.processInfo.environment["KCFS_CRASH_ROUNDS"] ?? "") ?? 20
        let passphrase = "crash " + Canary.make(8)
        try h.createVault(passphrase: passphrase)
        let clients = 3, keysPerClient = 4
        let model = Model()
        let keys = (0..<clients).flatMap { c in (0..<keysPerClient).map { "c\(c)k\($0)" } }
        for k in keys { model.set(k, [nil]) }
        let stats = Stats()
        let harness = Unchecked(h!)

        for round in 0..<rounds {
            // (Re)start: the first verb starts the daemon; it comes up locked after a kill.
            let unlock = try h.run(["unlock-keychain"], input: passphrase + "\n")
            XCTAssertEqual(unlock.status, 0, "round \(round): unlock after restart: \(unlock)")
            let daemons = h.daemons()
            guard daemons.count == 1, let pid = daemons.first?.pid else {
                return XCTFail("round \(round): expected one daemon, found \(daemons)")
            }
            let stop = Flag()
            let group = DispatchGroup()
            for c in 0..<clients {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    var n = 0
                    while !stop.isSet {
                        n += 1
                        let key = "c\(c)k\(Int.random(in: 0..<keysPerClient))"
                        let before = model.get(key)
                        let delete = before != [nil] && Int.random(in: 0..<10) < 3
                        // Short and long secrets (long ones take several WAL pages).
                        let length = Int.random(in: 0..<10) < 3 ? Int.random(in: 16_000...60_000) : Int.random(in: 8...64)
                        let value = "r\(round)-\(key)-\(n)-" + Canary.text(length)
                        let args = delete ? ["delete-generic-password", "-s", "crash", "-a", key]
                                          : ["add-generic-password", "-s", "crash", "-a", key, "-U", "-w", "-"]
                        guard let r = try? harness.value.run(args, input: delete ? nil : value + "\n", timeout: 30) else { continue }
                        let after: [String?]
                        switch (r.status, delete) {
                        case (0, false): after = [value]
                        case (0, true), (44, true): after = [nil]
                        default: after = before + [delete ? nil : value]   // answer lost: either
                        }
                        var unique: [String?] = []
                        for v in after where !unique.contains(v) { unique.append(v) }
                        model.set(key, unique)
                        model.note("round \(round) \(key) \(delete ? "delete" : "set \(value.prefix(24))…(\(value.count))") -> \(r.status)")
                        stats.count(r.status, acknowledged: r.status == 0 || (delete && r.status == 44))
                    }
                }
            }
            let killDelay = UInt32.random(in: 0...200_000)
            usleep(killDelay)
            kill(pid, SIGKILL)
            stop.set()
            group.wait()
            XCTAssertTrue(h.waitUntil(5) { !processAlive(pid) }, "round \(round): the killed daemon is gone")

            // Restart (a client may already have started a new daemon; it is locked either way).
            let relock = try h.run(["unlock-keychain"], input: passphrase + "\n")
            XCTAssertEqual(relock.status, 0, "round \(round): unlock after the kill: \(relock)")
            var found: [String: String] = [:]
            for item in try h.dump() {
                let attrs = item["attributes"] as? [String: Any] ?? [:]
                guard attrs["svce"] as? String == "crash", let acct = attrs["acct"] as? String else {
                    XCTFail("round \(round): unexpected item \(attrs)")
                    continue
                }
                XCTAssertNil(found[acct], "round \(round): \(acct) twice")
                guard let secret = jsonBytes(item["password"]) else {
                    XCTFail("round \(round): \(acct) has no readable secret: \(item["password"] ?? "nil")")
                    continue
                }
                found[acct] = String(decoding: secret, as: UTF8.self)
            }
            // dump-keychain leaves out items that fail to open: compare with the clear row count.
            let info = try h.info()
            XCTAssertEqual(info["items"] as? Int, found.count, "round \(round): every stored row opens (dump shows \(found.count))")
            for key in keys {
                let possible = model.get(key)
                let actual = found[key]
                XCTAssertTrue(possible.contains(actual),
                              "round \(round): \(key) holds \(actual.map { "\($0.prefix(40))…(\($0.count))" } ?? "nothing"); "
                                + "allowed: \(possible.map { $0.map { "\($0.prefix(40))…(\($0.count))" } ?? "nothing" })")
                // What the vault holds now is what the next round builds on.
                model.set(key, [actual])
                // Every present item reads whole through find -w; absent ones are not found.
                let r = try h.run(["find-generic-password", "-s", "crash", "-a", key, "-w"])
                if let actual {
                    XCTAssertEqual(r.status, 0, "round \(round): find \(key): \(r.status) \(r.stderr)")
                    XCTAssertTrue(r.stdout == actual + "\n", "round \(round): find \(key) gives \(r.stdout.count) bytes, dump gave \(actual.count + 1)")
                } else {
                    XCTAssertEqual(r.status, 44, "round \(round): \(key) is absent: \(r.status) \(r.stderr)")
                }
            }
            // `keychainfs verify`: every blob opens, every index token matches its item, and the
            // audit log's chain holds across the kill.
            let verify = try h.run(["verify"])
            if verify.status != 0 {
                let lines = (try? String(contentsOfFile: h.vault + ".audit", encoding: .utf8))?
                    .split(separator: "\n", omittingEmptySubsequences: false) ?? []
                let daemonLog = (try? String(contentsOfFile: Paths.logFile(forVault: h.vault), encoding: .utf8)) ?? ""
                XCTFail("round \(round) (killed after \(killDelay / 1000) ms): verify exits \(verify.status): "
                        + "\(verify.stdout) \(verify.stderr); last audit lines: \(lines.suffix(3).map(\.debugDescription)); "
                        + "daemon log: \(daemonLog.split(separator: "\n").suffix(8).joined(separator: " | "))")
            }
            if testRun?.failureCount ?? 0 > 0 {
                print(model.log.suffix(30).joined(separator: "\n"))
                break
            }
        }
        print("crash rounds: \(rounds), acknowledged \(stats.acknowledged), failed \(stats.failed), statuses \(stats.statuses.sorted { $0.key < $1.key })")
        XCTAssertGreaterThan(stats.acknowledged, rounds, "the clients got work done between kills")
    }

    /// What a kill or a power cut during the audit log's append can leave: the last line cut
    /// short, without its newline. The next daemon must keep the chain verifiable.
    func testTornLastAuditLineKeepsTheChainVerifiable() throws {
        let passphrase = "torn " + Canary.make(8)
        try h.createVault(passphrase: passphrase)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "torn", "-a", "one", "-w", "-"], input: "1").status, 0)
        XCTAssertEqual(try h.run(["audit", "--verify"]).status, 0)
        guard let pid = try h.daemonPID() else { return XCTFail("no daemon") }
        kill(pid, SIGKILL)
        XCTAssertTrue(h.waitUntil(5) { !processAlive(pid) })
        // The kill came in the middle of one more line.
        let path = h.vault + ".audit"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let last = text.split(separator: "\n").last.map(String.init) ?? ""
        let torn = Array(last.utf8.prefix(last.utf8.count / 2))
        let fd = open(path, O_WRONLY | O_APPEND)
        XCTAssertGreaterThanOrEqual(fd, 0)
        _ = torn.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)

        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "torn", "-a", "two", "-w", "-"], input: "2").status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "torn", "-a", "one", "-w"]).stdout, "1\n")
        let verify = try h.run(["audit", "--verify"])
        let tail = (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").suffix(3)
            .map { String($0.prefix(90)).debugDescription }.joined(separator: " / ") ?? ""
        XCTAssertEqual(verify.status, 0, "after a torn last line the chain verifies: \(verify); last lines: \(tail)")
    }
}
