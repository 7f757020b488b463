import Foundation
import KeychainTestSupport
import XCTest

/// Descriptors from strangers (PRODUCT 11, issue 26): an ordinary user mounts a FUSE file
/// system whose FLUSH never answers anyone else (hangfs), opens its file and passes the
/// descriptor to root's daemon with a ping. Whoever closes that descriptor waits in the kernel
/// for good; four such users once took every event thread. Asserted as the owner sees it: the
/// owner's find and lock answer, no daemon thread waits on a FUSE answer, SIGTERM ends it.
final class PassedDescriptorAttackTests: XCTestCase {
    var h: CLIHarness!
    let accounts = TestAccounts()
    let secret = Canary.make()
    private var fileSystems: [HangingFileSystem] = []
    private var processes: [BackgroundProcess] = []

    override func setUpWithError() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root: test users, setpriv and the daemon's /proc entries") }
        guard access("/usr/bin/python3", X_OK) == 0 else { throw XCTSkip("the attackers need /usr/bin/python3 (scripts/setup.sh)") }
        guard access("/dev/fuse", R_OK | W_OK) == 0, access("/usr/bin/fusermount3", X_OK) == 0 else {
            throw XCTSkip("no /dev/fuse or fusermount3: the attackers mount their own file systems")
        }
        h = try CLIHarness()
        try FileManager.default.createDirectory(atPath: h.runtimeDir, withIntermediateDirectories: true)
        chmod(h.runtimeDir, 0o755)
        try h.createVault()
        let r = try h.run(["add-generic-password", "-s", "rootsvc", "-a", "root", "-w", "-"], input: secret)
        XCTAssertEqual(r.status, 0, "\(r)")
    }

    override func tearDown() {
        // The attackers first, then their file systems: their end frees whatever waited on them.
        for p in processes.reversed() { p.stop() }
        processes = []
        for fs in fileSystems { fs.stop() }
        fileSystems = []
        if let h {
            for d in h.daemons() { kill(d.pid, SIGKILL) }
            h.tearDown()
        }
        h = nil
        accounts.remove()
        super.tearDown()
    }

    func testStrangersDescriptorsBlockNoThreadOfTheDaemon() throws {
        let status = try h.run(["status"])
        guard let pid = try h.daemonPID(), let at = status.stdout.range(of: ", socket ") else {
            return XCTFail("no daemon after create-keychain: \(status)")
        }
        let socket = String(status.stdout[at.upperBound...].prefix { $0 != "\n" })
        // Four outsiders, each with its own hanging file system, each passing its file with a ping.
        for i in 0..<4 {
            let user = try accounts.makeUser()
            let fs = try HangingFileSystem(as: user, in: h.dir, name: "hang\(i)")
            fileSystems.append(fs)
            let attacker = try Attackers.start("pass_fd.py", [socket, fs.file], as: user, scratch: h.dir)
            processes.append(attacker)
            let sent = try attacker.expect(["refused", "sent"], within: 20)
            let answer = try attacker.expect(["reply", "closed", "timeout"], within: 20)
            if sent[0] == "refused" {
                // SO_PASSRIGHTS (Linux 6.16): the kernel refuses to carry it; the connection still serves.
                XCTAssertEqual(sent, ["refused", "EPERM"], "attacker \(i)")
                XCTAssertEqual(answer, ["reply", "0"], "attacker \(i): the ping without the descriptor is answered")
            } else {
                // Older kernels: the daemon receives with no room for one, and drops the connection.
                XCTAssertEqual(answer, ["closed"], "attacker \(i): a connection that passes a descriptor is closed")
            }
        }
        for (i, fs) in fileSystems.enumerated() {
            XCTAssertNil(fs.heldRequest(within: i == 0 ? 1 : 0.1), "hangfs \(i) holds a request of the daemon")
        }

        // The owner is served at once.
        let find = try h.run(["find-generic-password", "-s", "rootsvc", "-w"], timeout: 20)
        XCTAssertEqual(find.status, 0, "\(find)")
        XCTAssertEqual(find.stdout, secret + "\n")
        XCTAssertLessThan(find.elapsed, 1, "the owner's find-generic-password took \(find.elapsed) s")
        let lock = try h.run(["lock-keychain"], timeout: 20)
        XCTAssertEqual(lock.status, 0, "\(lock)")
        XCTAssertLessThan(lock.elapsed, 1, "the owner's lock-keychain took \(lock.elapsed) s")
        let waits = threadWaits(of: pid)
        XCTAssertFalse(waits.isEmpty, "control: the daemon's threads are readable in /proc")
        XCTAssertTrue(waits.contains { $0.thread.hasPrefix("kcfs-event") }, "control: event threads listed: \(waits)")
        XCTAssertEqual(waits.filter { $0.wchan.contains("request_wait_answer") }.map(\.thread), [],
                       "daemon threads waiting on a FUSE answer: \(waits)")

        // SIGTERM ends it while the attackers still hold their file systems.
        XCTAssertEqual(kill(pid, SIGTERM), 0)
        let ended = h.waitUntil(10) { !Self.hasLiveThreads(pid) }
        XCTAssertTrue(ended, "the daemon did not end on SIGTERM: \(threadWaits(of: pid))")
    }

    /// True while any thread of `pid` has not exited (a zombie leader whose other threads are
    /// stuck in the kernel counts as live).
    static func hasLiveThreads(_ pid: pid_t) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { tid in
            guard let text = ProcessMemory.readProcFile("/proc/\(pid)/task/\(tid)/status") else { return false }
            return !text.contains("\nState:\tZ") && !text.contains("\nState:\tX")
        }
    }
}
