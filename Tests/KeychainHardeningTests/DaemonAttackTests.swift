import Foundation
import KeychainProtocol
import KeychainTestSupport
import XCTest

/// What a hostile local user may cost the daemon (PRODUCT 11, issue 13). Each test runs a real
/// attack as a throw-away Unix user against root's daemon, with the attacker programs of
/// Attackers/ (python3, run through setpriv), and asserts what the victim observes: the secret
/// that did not leak, the daemon that stayed up, the owner's command that answered.
final class DaemonAttackTests: XCTestCase {
    var h: CLIHarness!
    let accounts = TestAccounts()
    /// In no group; the attacker.
    var outsider: TestUser!
    /// In the Unix group that the `team` access group (mode 0440) names.
    var member: TestUser!
    /// The `team` access group's owner.
    var teamOwner: TestUser!
    var socket = ""
    var daemonPID: Int32 = 0
    let teamSecret = Canary.make()
    let rootSecret = Canary.make()
    private var processes: [BackgroundProcess] = []
    private var mountpoints: [String] = []
    private var samplers: [DaemonSampler] = []

    override func setUpWithError() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root: test users, setpriv and the daemon's /proc entries") }
        guard access("/usr/bin/python3", X_OK) == 0 else {
            throw XCTSkip("the attackers need /usr/bin/python3 (scripts/setup.sh installs it)")
        }
        try accounts.makeGroup()
        outsider = try accounts.makeUser()
        member = try accounts.makeUser(inGroup: true)
        teamOwner = try accounts.makeUser()
        h = try CLIHarness()
        // Root owns the runtime directory and runs the daemon; the test users only connect.
        try FileManager.default.createDirectory(atPath: h.runtimeDir, withIntermediateDirectories: true)
        chmod(h.runtimeDir, 0o755)
        try h.createVault()
        let team = try h.run(["group", "add", "team", "--owner", teamOwner.name, "--group", accounts.groupName!, "--mode", "0440"])
        XCTAssertEqual(team.status, 0, "\(team)")
        try add("teamsvc", "deploy", teamSecret, ["--access-group", "team"])
        try add("rootsvc", "root", rootSecret)
        let status = try h.run(["status"])
        guard let pid = try h.daemonPID(), let at = status.stdout.range(of: ", socket ") else {
            XCTFail("no daemon after create-keychain: \(status)")
            throw AttackStepFailed(description: "no daemon")
        }
        daemonPID = pid
        socket = String(status.stdout[at.upperBound...].prefix { $0 != "\n" })
    }

    override func tearDown() {
        for p in processes.reversed() { p.stop() }
        processes = []
        for s in samplers { _ = s.stop() }
        samplers = []
        if let h {
            // A daemon still starved by an attack would not answer `stop`.
            let probe = try? Spawn.run([CLIHarness.binary, "status"], environment: h.environment, input: Data(), timeout: 5)
            if probe == nil || probe!.timedOut { for d in h.daemons() { kill(d.pid, SIGKILL) } }
            for point in mountpoints where MountTestCase.isMounted(point) {
                _ = try? h.run(["unmount", point], timeout: 20)
                if MountTestCase.isMounted(point) { _ = try? runProgram(["/bin/umount", "-l", point], timeout: 20) }
            }
            h.tearDown()
        }
        h = nil
        accounts.remove()
        super.tearDown()
    }

    // MARK: 1. Identity pinned at connect

    /// An outsider's forked child connects and asks for a 0440 group's secret, then exits; its
    /// pid goes to a process of a group member before the daemon gets to the connection, and the
    /// outsider asks again on the same connection. Both answers must be the outsider's: not the
    /// secret.
    func testReusedPIDDoesNotLendAMembersGroups() throws {
        let attacker = try attack("pid_reuse.py", [socket, "300", "teamsvc"])
        let idle = try attacker.expect("idle", within: 60)
        XCTAssertGreaterThan(Int(idle.last ?? "") ?? 0, 0, "the outsider reaches the daemon's socket at all: \(idle)")
        let child = try attacker.expect("child", within: 30)
        guard child.count == 3, let pid = Int32(child[1]) else { return XCTFail("\(child)") }
        // A daemon that takes no more connections of this user leaves nothing to read.
        guard child[2] == "sent" else { return }
        guard let impostor = spawnOnPID(pid, member.setpriv(initGroups: true) + ["/bin/sleep", "30"], scratch: h.dir) else {
            throw XCTSkip("could not put a process of the member on pid \(pid): other processes of the machine took it")
        }
        processes.append(impostor)
        // setpriv changes its user and groups, then becomes sleep.
        var status = ""
        let isMembers = h.waitUntil(5) {
            status = ProcessMemory.readProcFile("/proc/\(pid)/status") ?? ""
            return status.hasPrefix("Name:\tsleep\n") && status.contains("\nUid:\t\(member.uid)\t")
        }
        XCTAssertTrue(isMembers, "pid \(pid) is the member's sleep now: \(status.prefix(400))")
        attacker.tell("close")
        var answers: [String] = []
        while let answer = attacker.line(within: 90), answer != "end" { answers.append(answer) }
        attacker.tell("quit")
        XCTAssertFalse(answers.isEmpty, "the attacker reported nothing: \(attacker.errors)")
        for answer in answers {
            XCTAssertFalse(answer.lowercased().contains(hardeningHex(Array(teamSecret.utf8))),
                           "the outsider read the team's secret through a pid it no longer had: \(answer.prefix(120))")
            XCTAssertTrue(answer == "closed" || (answer.hasPrefix("reply ") && !answer.hasPrefix("reply 0 ")),
                          "the outsider's search must be refused or its connection closed; it got \(answer.prefix(120))")
        }
    }

    // MARK: 2. Guarded memory from bounded arenas

    /// Unlock requests with 255 wrong passphrases of 600 bytes each, 150 at once, held while the
    /// back-off sleeps: without bounds every passphrase costs its own mappings, and at
    /// vm.max_map_count `sodium_malloc` fails and the daemon dies.
    func testUnlockFloodDoesNotExhaustMappings() throws {
        let sampler = sampleDaemon()
        let attacker = try attack("unlock_flood.py", [socket, "150", "255", "600", "15"])
        let sent = try attacker.expect("sent", within: 40)
        let done = try attacker.expect("done", within: 40)
        attacker.stop()
        let peaks = sampler.stop()
        XCTAssertTrue(processAlive(daemonPID), "the daemon died under the unlock flood (\(sent), \(done)); \(peaks)")
        XCTAssertLessThan(peaks.maps, 5000, "the daemon's mappings grew with unauthenticated requests (\(sent)); \(peaks)")
        try assertOwnerReads(within: 5, "after the unlock flood")
        XCTAssertEqual(h.daemons().map(\.pid), [daemonPID], "the same daemon serves")
    }

    /// 16,333 opens of one 1,000-byte file by an outsider through an `allow_other` mount, all
    /// kept open: each would hold its secret in its own guarded allocation.
    func testOpenFloodThroughAMountDoesNotExhaustMappings() throws {
        guard access("/dev/fuse", R_OK | W_OK) == 0 else { throw XCTSkip("no /dev/fuse") }
        XCTAssertEqual(try h.run(["group", "add", "public", "--mode", "0444"]).status, 0)
        let contents = Canary.text(1000)
        try add("pub", "file", contents, ["--access-group", "public"])
        let point = h.dir + "/mnt"
        try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: false)
        chmod(point, 0o755)
        mountpoints.append(point)
        let mount = try h.run(["mount", "-o", "allow_other", point], timeout: 30)
        XCTAssertEqual(mount.status, 0, "\(mount)")
        let file = point + "/pub/file"
        XCTAssertEqual(FS.read(file).bytes.map { String(decoding: $0, as: UTF8.self) }, contents)

        let sampler = sampleDaemon()
        let attacker = try attack("open_flood.py", [file, "16333"])
        let opened = try attacker.expect("opened", within: 120)
        attacker.tell("close")
        _ = try attacker.expect("closed", within: 60)
        attacker.tell("quit")
        let peaks = sampler.stop()
        XCTAssertTrue(processAlive(daemonPID), "the daemon died under the outsider's opens (\(opened)); \(peaks)")
        XCTAssertLessThan(peaks.maps, 5000, "the daemon's mappings grew with the outsider's open files (\(opened)); \(peaks)")
        XCTAssertEqual(FS.read(file).bytes.map { String(decoding: $0, as: UTF8.self) }, contents, "the file still reads")
        try assertOwnerReads(within: 5, "after the open flood")
    }

    // MARK: 3. Idle connections cost no thread; partial frames have a deadline

    /// 300 connections that send nothing: the owner is served during the flood.
    func testIdleConnectionsDoNotStopTheOwner() throws {
        let attacker = try attack("idle_flood.py", [socket, "300", "idle", "0"])
        let ready = try attacker.expect("ready", within: 60)
        try assertOwnerServed(within: 3, "during \(ready[1]) idle connections of another user")
        attacker.tell("close")
    }

    /// 300 connections that each send one byte of a frame header and stall: the owner is served,
    /// and the daemon closes every stalled connection within 30 s.
    func testStalledFramesAreClosedAfterADeadline() throws {
        let attacker = try attack("idle_flood.py", [socket, "300", "partial", "30"])
        let ready = try attacker.expect("ready", within: 60)
        try assertOwnerServed(within: 3, "during \(ready[1]) stalled frames of another user")
        // `eof K of N after T`
        let eof = try attacker.expect("eof", within: 60)
        attacker.tell("close")
        XCTAssertEqual(eof.count, 6, "\(eof)")
        guard eof.count == 6 else { return }
        XCTAssertEqual(eof[1], eof[3], "every stalled frame's connection is closed by the daemon within 30 s: \(eof.joined(separator: " "))")
        XCTAssertLessThanOrEqual(Double(eof[5]) ?? 99, 30, "\(eof.joined(separator: " "))")
    }

    // MARK: 4. Pending bytes per uid

    /// Six connections each announce a 64 MiB frame and send 60 MiB of it over 10 s: the daemon's
    /// locked and resident memory stay bounded, and the owner is served meanwhile.
    func testSlowLargeFramesDoNotLockMemory() throws {
        try assertSlowFramesBounded(connections: 6, announced: 64 << 20, sent: 60 << 20)
    }

    /// The same with frames the daemon accepts: sixteen connections announce the largest frame
    /// and send all of it but 1 MiB.
    func testSlowLargestAcceptedFramesDoNotLockMemory() throws {
        try assertSlowFramesBounded(connections: 16, announced: Frame.maximumLength, sent: Frame.maximumLength - (1 << 20))
    }

    func assertSlowFramesBounded(connections: Int, announced: Int, sent total: Int,
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        let sampler = sampleDaemon()
        let attacker = try attack("slow_frames.py", [socket, String(connections), String(announced), String(total), "10"])
        usleep(6_000_000)
        try assertOwnerReads(within: 5, "while another user's large frames arrive (\(sampler.current))", file: file, line: line)
        let sent = try attacker.expect("sent", within: 60, file: file, line: line)
        let peaks = sampler.stop()
        attacker.tell("close")
        XCTAssertLessThan(peaks.lockedKiB, 200 << 10, "locked memory grew with another user's unfinished frames (\(sent)); \(peaks)",
                          file: file, line: line)
        XCTAssertLessThan(peaks.residentKiB, 200 << 10, "resident memory grew with another user's unfinished frames (\(sent)); \(peaks)",
                          file: file, line: line)
        XCTAssertTrue(processAlive(daemonPID), "the daemon survived", file: file, line: line)
        try assertOwnerReads(within: 3, "after the large frames", file: file, line: line)
    }

    // MARK: 5. Remembered approvals are per (uid, executable, item)

    /// User A approves a presence-gated item once, with `approval-remember`; user B, entitled
    /// to the same group and running the same binary within the window, is asked again.
    func testRememberedApprovalIsNotSharedAcrossUsers() throws {
        let program = h.dir + "/approve.sh", calls = h.dir + "/calls"
        try "#!/bin/sh\necho \"$@\" >> \(calls)\nexit 0\n".write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        let settings = try h.run(["set-keychain-settings", "--approval-program", program, "--approval-remember", "60"])
        XCTAssertEqual(settings.status, 0, "\(settings)")
        let gatedSecret = Canary.make()
        try add("gated", "app", gatedSecret, ["--access-group", "team", "--access-control", "userPresence"])

        let byA = try h.run(["find-generic-password", "-s", "gated", "-w"], prefix: teamOwner.setpriv(initGroups: true))
        XCTAssertEqual(byA.status, 0, "user A, approved: \(byA)")
        XCTAssertEqual(byA.stdout, gatedSecret + "\n")
        let byB = try h.run(["find-generic-password", "-s", "gated", "-w"], prefix: member.setpriv(initGroups: true))
        XCTAssertEqual(byB.status, 0, "user B, approved: \(byB)")
        let asked = ((try? String(contentsOfFile: calls, encoding: .utf8)) ?? "").split(separator: "\n")
        XCTAssertEqual(asked.count, 2, "user B must be asked for itself, not ride on user A's approval: \(asked)")
        XCTAssertTrue(asked.first?.contains("--uid \(teamOwner.uid) ") ?? false, "\(asked)")
        XCTAssertTrue(asked.dropFirst().first?.contains("--uid \(member.uid) ") ?? false, "\(asked)")
    }

    // MARK: 6. One daemon per vault

    /// A second daemon for the same vault, told another runtime directory, must not start.
    func testSecondDaemonWithAnotherRuntimeDirectoryRefuses() throws {
        let elsewhere = h.dir + "/run-elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false)
        chmod(elsewhere, 0o755)
        var env = h.environment
        env["KEYCHAINFS_RUNTIME_DIR"] = elsewhere
        let second = try BackgroundProcess([CLIHarness.binary, "daemon", h.vault], environment: env, errorPath: h.dir + "/second.err")
        processes.append(second)
        let exit = second.exitStatus(within: 10)
        let daemons = h.daemons().map(\.pid)
        second.stop()
        XCTAssertNotNil(exit, "a second daemon serves \(h.vault) from \(elsewhere): \(second.errors)")
        if let exit { XCTAssertNotEqual(exit, 0, "the second daemon's exit: \(second.errors)") }
        XCTAssertEqual(daemons, [daemonPID], "only one daemon process for the vault")
        try assertOwnerReads(within: 5, "from the first daemon")
        XCTAssertEqual(try h.daemonPID(), daemonPID)
    }

    // MARK: Helpers

    func sampleDaemon() -> DaemonSampler {
        let s = DaemonSampler(pid: daemonPID)
        samplers.append(s)
        return s
    }

    func attack(_ script: String, _ args: [String]) throws -> BackgroundProcess {
        let p = try Attackers.start(script, args, as: outsider, scratch: h.dir)
        processes.append(p)
        return p
    }

    func add(_ service: String, _ account: String, _ secret: String, _ extra: [String] = [],
             file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try h.run(["add-generic-password", "-s", service, "-a", account, "-w", "-"] + extra, input: secret,
                          file: file, line: line)
        XCTAssertEqual(r.status, 0, "add \(service)/\(account): \(r)", file: file, line: line)
    }

    /// The vault owner's `find-generic-password -w` reads its secret within `limit` seconds.
    func assertOwnerReads(within limit: Double, _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try h.run(["find-generic-password", "-s", "rootsvc", "-w"], timeout: limit + 5, file: file, line: line)
        XCTAssertEqual(r.status, 0, "the owner's find-generic-password \(context): \(r)", file: file, line: line)
        XCTAssertEqual(r.stdout, rootSecret + "\n", "the owner's secret \(context)", file: file, line: line)
        XCTAssertLessThan(r.elapsed, limit, "the owner's find-generic-password \(context) took \(r.elapsed) s", file: file, line: line)
    }

    /// The owner's find, lock and unlock each answer within `limit` seconds.
    func assertOwnerServed(within limit: Double, _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try assertOwnerReads(within: limit, context, file: file, line: line)
        for (args, input) in [(["lock-keychain"], nil), (["unlock-keychain"], "pass phrase 1\n")] as [([String], String?)] {
            let r = try h.run(args, input: input, timeout: limit + 5, file: file, line: line)
            XCTAssertEqual(r.status, 0, "the owner's \(args[0]) \(context): \(r)", file: file, line: line)
            XCTAssertLessThan(r.elapsed, limit, "the owner's \(args[0]) \(context) took \(r.elapsed) s", file: file, line: line)
        }
    }
}
