import Foundation
import KeychainTestSupport
import XCTest

/// Watchers against a hostile local user (PRODUCT 11): a watcher sees only changes of items its
/// caller may see, a watcher that never reads delays nobody, and one uid holds a bounded number
/// of watchers. Real users: a member of the vault's `team` group watches root's daemon.
final class CLIWatchHostileTests: MountTestCase {
    var member = ""
    var unixGroup = ""
    var watchers: [Process] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        let suffix = String((0..<6).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
        member = "kcfs" + suffix
        unixGroup = "kcfg" + suffix
        XCTAssertEqual(runTool(["/usr/sbin/groupadd", unixGroup]), 0)
        XCTAssertEqual(runTool(["/usr/sbin/useradd", "-M", "-N", "-s", "/usr/sbin/nologin", "-G", unixGroup, member]), 0)
        guard getpwnam(member) != nil else { throw XCTSkip("could not create a test user") }
        let team = try h.run(["group", "add", "team", "--group", unixGroup, "--mode", "0440"])
        XCTAssertEqual(team.status, 0, "\(team)")
    }

    override func tearDown() {
        for p in watchers where p.isRunning {
            kill(p.processIdentifier, SIGCONT)
            p.terminate()
            p.waitUntilExit()
        }
        watchers = []
        super.tearDown()
        if !member.isEmpty { _ = runTool(["/usr/sbin/userdel", member]) }
        if !unixGroup.isEmpty { _ = runTool(["/usr/sbin/groupdel", unixGroup]) }
    }

    /// Starts `keychainfs watch ARGS` (as `user`, or root) writing to a file of its own.
    func startWatch(_ args: [String], as user: String? = nil) throws -> (Process, String) {
        let out = h.dir + "/watch-\(UUID().uuidString.prefix(8)).out"
        XCTAssertTrue(FileManager.default.createFile(atPath: out, contents: nil))
        let p = Process()
        if let user, let pw = getpwnam(user) {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            p.arguments = ["--reuid", String(pw.pointee.pw_uid), "--regid", String(pw.pointee.pw_gid), "--init-groups",
                           CLIHarness.binary, "watch"] + args
        } else {
            p.executableURL = URL(fileURLWithPath: CLIHarness.binary)
            p.arguments = ["watch"] + args
        }
        p.environment = h.environment
        p.standardOutput = FileHandle(forWritingAtPath: out)
        p.standardError = FileHandle.nullDevice
        try p.run()
        watchers.append(p)
        return (p, out)
    }

    func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func events(_ path: String) -> [[String: Any]] {
        lines(path).compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The events that concern items (not the locks and unlocks of `settle`).
    func itemEvents(_ path: String) -> [[String: Any]] {
        events(path).filter { $0["event"] as? String != "lock" && $0["event"] as? String != "unlock" }
    }

    /// Proves every watcher live: a lock and an unlock reach all of them.
    func settle(_ outputs: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0, file: file, line: line)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0, file: file, line: line)
        XCTAssertTrue(h.waitUntil(5) { outputs.allSatisfy { lines($0).contains { $0.contains("unlock") } } },
                      "every watcher is live", file: file, line: line)
    }

    func testAnotherUsersWatcherLearnsNothingOfItemsItMayNotSee() throws {
        let mnt = try mount()
        try add("hidden", "a", "root-secret")
        let (_, all) = try startWatch(["--json"], as: member)
        let (_, hiddenOnly) = try startWatch(["-s", "hidden", "--json"], as: member)
        let (_, sharedOnly) = try startWatch(["-s", "shared", "--json"], as: member)
        let (_, admin) = try startWatch(["--json"])
        try settle([all, hiddenOnly, sharedOnly, admin])
        // Root's own items (group default, owner-only): through the socket and through the mount.
        try add("hidden", "b", "x")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "hidden", "-a", "a", "-w", "y", "-U"]).status, 0)
        XCTAssertEqual(try h.run(["delete-generic-password", "-s", "hidden", "-a", "a"]).status, 0)
        assertErrno(FS.write(mnt + "/hidden/c", "made-through-the-mount"), FS.ok, "write through the mount")
        // Then items of the member's group.
        try add("shared", "x", "team-secret", ["--access-group", "team"])
        try add("shared", "end", "team-secret", ["--access-group", "team"])
        XCTAssertTrue(h.waitUntil(5) { itemEvents(admin).count >= 6 && itemEvents(all).count >= 2 && itemEvents(sharedOnly).count >= 2 },
                      "admin \(lines(admin)), member \(lines(all)), member -s shared \(lines(sharedOnly))")
        usleep(300_000)
        XCTAssertEqual(itemEvents(all).map { $0["event"] as? String }, ["add", "add"], "only the team's changes: \(lines(all))")
        XCTAssertTrue(events(all).allSatisfy { $0["service"] == nil && $0["account"] == nil }, "no names: \(lines(all))")
        XCTAssertEqual(itemEvents(hiddenOnly).count, 0, "a filter by a service learns nothing of its hidden items: \(lines(hiddenOnly))")
        XCTAssertEqual(itemEvents(sharedOnly).count, 2, lines(sharedOnly).description)
        XCTAssertEqual(itemEvents(admin).compactMap { $0["service"] as? String },
                       ["hidden", "hidden", "hidden", "hidden", "shared", "shared"], "administrators see every name")
    }

    func testAWatcherThatNeverReadsDelaysNobodyAndIsClosedWithOverflow() throws {
        let mnt = try mount()
        try add("flood", "f", "first")
        let (slow, slowOut) = try startWatch([])
        let (_, fast) = try startWatch(["--json"])
        try settle([slowOut, fast])
        kill(slow.processIdentifier, SIGSTOP)  // it reads nothing from now on
        let flood = 1200
        for i in 0..<flood {
            let e = FS.write(mnt + "/flood/f", "change \(i)")
            if e != FS.ok { return XCTFail("write \(i): \(FS.name(e))") }
        }
        try add("marker", "end", "x")
        XCTAssertTrue(h.waitUntil(5) { itemEvents(fast).last?["service"] as? String == "marker" },
                      "the reading watcher got every change: \(itemEvents(fast).count) of \(flood + 1)")
        XCTAssertEqual(itemEvents(fast).count, flood + 1)
        kill(slow.processIdentifier, SIGCONT)
        XCTAssertTrue(h.waitUntil(10) { !slow.isRunning }, "the slow watcher was disconnected")
        let got = lines(slowOut)
        XCTAssertTrue(got.last?.hasSuffix(" overflow") == true, "its last line says so: \(got.suffix(2))")
        XCTAssertLessThan(got.count, flood, "it did not get every change")
    }

    func testOneUserHoldsAtMostSixteenWatchersAndAClosedOneIsFreed() throws {
        var mine: [(Process, String)] = []
        for _ in 0..<16 { mine.append(try startWatch([], as: member)) }
        try settle(mine.map(\.1))
        XCTAssertTrue(mine.allSatisfy(\.0.isRunning))
        let refused = try h.run(["watch"], prefix: ["/usr/bin/setpriv", "--reuid", String(getpwnam(member)!.pointee.pw_uid),
                                                     "--regid", String(getpwnam(member)!.pointee.pw_gid), "--init-groups"],
                                timeout: 10)
        XCTAssertEqual(refused.status, 148, "the 17th watch is refused with errSecAllocate: \(refused)")
        XCTAssertTrue(refused.stderr.hasPrefix("keychainfs: "), refused.stderr)
        // Root is not starved by another uid's watchers.
        let (rootWatch, rootOut) = try startWatch(["--json"])
        try settle([rootOut])
        try add("svc", "a", "x")
        XCTAssertTrue(h.waitUntil(2) { itemEvents(rootOut).count == 1 }, lines(rootOut).description)
        XCTAssertTrue(rootWatch.isRunning)
        // A watcher that goes away frees its place without a word from it.
        mine[0].0.terminate()
        mine[0].0.waitUntilExit()
        usleep(300_000)
        let (again, againOut) = try startWatch([], as: member)
        try settle([againOut])
        XCTAssertTrue(again.isRunning, "a place was freed when a watcher's process ended")
    }
}
