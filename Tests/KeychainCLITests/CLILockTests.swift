import Foundation
import KeychainTestSupport
import XCTest

/// Lock, unlock, back-off, idle timeout, SIGUSR1, passphrase change and daemon lifecycle.
final class CLILockTests: XCTestCase {
    var h: CLIHarness!
    let pass = "correct horse battery"

    override func setUpWithError() throws {
        h = try CLIHarness()
        try h.createVault(passphrase: pass)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "ak", "-w", "ak-secret"]).status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "ck", "-w", "ck-secret",
                                  "--accessible", "AfterFirstUnlock"]).status, 0)
    }

    override func tearDown() {
        h?.tearDown()
        h = nil
        super.tearDown()
    }

    func find(_ account: String) throws -> CLIHarness.Result {
        try h.run(["find-generic-password", "-s", "svc", "-a", account, "-w"])
    }

    func assertLockedOut(_ account: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try find(account)
        XCTAssertEqual(r.status, 36, "\(account): \(r)", file: file, line: line)
        XCTAssertEqual(r.stdout, "", file: file, line: line)
        XCTAssertEqual(r.stderr, Sentence.interactionNotAllowed + Sentence.vaultLocked, file: file, line: line)
    }

    func testLockHidesWhenUnlockedItemsUntilUnlock() throws {
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n")
        let lock = try h.run(["lock-keychain"])
        XCTAssertEqual(lock.status, 0, "\(lock)")
        XCTAssertEqual(lock.stdout + lock.stderr, "")
        XCTAssertEqual(try h.info()["state"] as? String, "locked")
        try assertLockedOut("ak")
        let ck = try find("ck")
        XCTAssertEqual(ck.status, 0, "\(ck)")
        XCTAssertEqual(ck.stdout, "ck-secret\n")
        // Locking twice is fine; adding a WhenUnlocked item while locked is not allowed.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let add = try h.run(["add-generic-password", "-s", "svc", "-a", "new", "-w", "x"])
        XCTAssertEqual(add.status, 36, "\(add)")
        // The info text says so too.
        XCTAssertTrue(try h.run(["show-keychain-info"]).stdout.hasPrefix("Keychain \"\(h.vault)\" locked no-timeout\n"))

        let unlock = try h.run(["unlock-keychain"], input: pass + "\n")
        XCTAssertEqual(unlock.status, 0, "\(unlock)")
        XCTAssertEqual(unlock.stdout + unlock.stderr, "")
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n")
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked")
    }

    func testUnlockWithDashPWarns() throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let r = try h.run(["unlock-keychain", "-p", pass])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertEqual(r.stderr, "keychainfs: a passphrase on the command line is visible to other users; prefer standard input\n")
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n")
    }

    func testWrongPassphraseExits51AndBacksOffAcrossRestart() throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let wrong = try h.run(["unlock-keychain"], input: "wrong\n")
        XCTAssertEqual(wrong.status, 51, "\(wrong)")
        XCTAssertEqual(wrong.stdout, "")
        XCTAssertEqual(wrong.stderr, Sentence.authFailed)
        try assertLockedOut("ak")

        let second = try h.run(["unlock-keychain"], input: "wrong again\n")
        let secondEnd = Date()
        XCTAssertEqual(second.status, 51, "\(second)")
        XCTAssertEqual(second.stderr, Sentence.authFailed)
        XCTAssertGreaterThanOrEqual(second.elapsed, 0.9, "the attempt right after a failure is delayed")

        // Two failures: the next attempt waits 2 s from the last one, also in a new daemon.
        let oldPID = try h.daemonPID()
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertNil(try h.daemonPID())
        let restarted = try h.run(["show-keychain-info", "--json"])    // starts the daemon again
        XCTAssertEqual(restarted.status, 0, "\(restarted)")
        XCTAssertEqual(h.jsonObject(restarted.stdout)["state"] as? String, "never-unlocked")
        XCTAssertNotEqual(try h.daemonPID(), oldPID)
        let sinceFailure = Date().timeIntervalSince(secondEnd)
        let right = try h.run(["unlock-keychain"], input: pass + "\n")
        XCTAssertEqual(right.status, 0, "\(right)")
        XCTAssertLessThan(sinceFailure, 1.5, "stop and restart took too long to check the back-off")
        XCTAssertGreaterThanOrEqual(right.elapsed, 1.9 - sinceFailure, "the 2 s back-off survives a daemon restart")
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n")

        // A success clears the back-off.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let fresh = try h.run(["unlock-keychain"], input: pass + "\n")
        XCTAssertEqual(fresh.status, 0, "\(fresh)")
        XCTAssertLessThan(fresh.elapsed, 0.9, "no delay after a successful unlock")
    }

    /// The back-off is a full second from the failure even when a second boundary falls in
    /// between (it was once kept in whole seconds, so the first delay could be 0).
    func testBackOffIsAFullSecondEvenAcrossASecondBoundary() throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        sleepUntilFraction(0.5)
        let wrong = try h.run(["unlock-keychain"], input: "wrong\n")
        XCTAssertEqual(wrong.status, 51, "\(wrong)")
        let failedAt = Date()
        sleepUntilFraction(0.05)                          // just after the next second starts
        let next = try h.run(["unlock-keychain"], input: pass + "\n")
        XCTAssertEqual(next.status, 0, "\(next)")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(failedAt), 0.9,
                                    "the attempt after a failure must wait a full second from the failure")
    }

    /// A wrong old passphrase in set-keychain-password counts as a failed unlock, so the
    /// passphrase cannot be guessed through it without the back-off.
    func testWrongOldPassphraseInSetKeychainPasswordBacksOff() throws {
        let first = try h.run(["set-keychain-password"], input: "guess one\nnew pass\n")
        XCTAssertEqual(first.status, 51, "\(first)")
        let second = try h.run(["set-keychain-password"], input: "guess two\nnew pass\n")
        XCTAssertEqual(second.status, 51, "\(second)")
        XCTAssertGreaterThanOrEqual(second.elapsed, 0.9, "a second guess right after a failure is delayed")
        // And it delays the next unlock too (one shared back-off).
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let unlock = try h.run(["unlock-keychain"], input: pass + "\n")
        XCTAssertEqual(unlock.status, 0, "\(unlock)")
        XCTAssertGreaterThanOrEqual(unlock.elapsed, 1.5, "two failures: 2 s from the last one")
    }

    /// The daemon the CLI starts holds none of the CLI's inherited descriptors beyond 0-2, so a
    /// parent waiting for EOF on a pipe it passed down (Foundation's Process, a CI log pipe)
    /// does not wait for the daemon to exit.
    func testDaemonDoesNotKeepTheCallersDescriptors() throws {
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(fds[0]) }
        // The command that starts the daemon gets our pipe's write end as its descriptor 3.
        let r = try Spawn.run([CLIHarness.binary, "show-keychain-info"], environment: h.environment, input: Data(),
                              timeout: 30, passing: fds[1])
        close(fds[1])
        XCTAssertEqual(r.status, 0)
        XCTAssertNotNil(try h.daemonPID(), "the command started a daemon")
        var p = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        _ = poll(&p, 1, 2000)
        XCTAssertNotEqual(Int32(p.revents) & Int32(POLLHUP), 0,
                          "EOF on the pipe once the command exited: nobody else (the daemon) holds it")
    }

    func testIdleTimeoutLocks() throws {
        let set = try h.run(["set-keychain-settings", "-t", "2"])
        XCTAssertEqual(set.status, 0, "\(set)")
        let info = try h.info()
        XCTAssertEqual(info["lock-timeout"] as? Int, 2)
        XCTAssertEqual(info["state"] as? String, "unlocked")
        XCTAssertTrue(try h.run(["show-keychain-info"]).stdout.hasPrefix("Keychain \"\(h.vault)\" unlocked timeout=2s\n"))
        let start = Date()
        // show-keychain-info does not count as activity; poll it until the daemon locks itself.
        let locked = try h.waitUntil(5) { try h.info()["state"] as? String == "locked" }
        XCTAssertTrue(locked, "locked after 2 s idle")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 1.5, "not before the timeout")
        try assertLockedOut("ak")
        XCTAssertEqual(try find("ck").stdout, "ck-secret\n")
        // The timeout is stored in the vault: a restarted daemon keeps it.
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertEqual(try h.info()["lock-timeout"] as? Int, 2)
        // Without -t: never.
        XCTAssertEqual(try h.run(["set-keychain-settings"]).status, 0)
        XCTAssertEqual(try h.info()["lock-timeout"] as? Int, 0)
    }

    func testSIGUSR1Locks() throws {
        guard let pid = try h.daemonPID() else { return XCTFail("no daemon") }
        XCTAssertEqual(try h.info()["pid"] as? Int, Int(pid))
        XCTAssertEqual(kill(pid, SIGUSR1), 0)
        XCTAssertTrue(try h.waitUntil(3) { try h.info()["state"] as? String == "locked" }, "SIGUSR1 locks")
        XCTAssertEqual(try h.daemonPID(), pid, "the daemon keeps running")
        try assertLockedOut("ak")
        XCTAssertEqual(try find("ck").stdout, "ck-secret\n")
        XCTAssertEqual(try h.run(["unlock-keychain"], input: pass + "\n").status, 0)
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n")
    }

    func testSetKeychainPassword() throws {
        let newPass = "new pass ü"
        let change = try h.run(["set-keychain-password"], input: "\(pass)\n\(newPass)\n")
        XCTAssertEqual(change.status, 0, "\(change)")
        XCTAssertEqual(change.stdout + change.stderr, "")
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n", "still unlocked after the change")
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let old = try h.run(["unlock-keychain"], input: pass + "\n")
        XCTAssertEqual(old.status, 51, "\(old)")
        XCTAssertEqual(old.stderr, Sentence.authFailed)
        try assertLockedOut("ak")
        let new = try h.run(["unlock-keychain"], input: newPass + "\n")
        XCTAssertEqual(new.status, 0, "\(new)")
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n")
        // A wrong old passphrase changes nothing.
        let wrongOld = try h.run(["set-keychain-password"], input: "not it\nthird\n")
        XCTAssertEqual(wrongOld.status, 51, "\(wrongOld)")
        XCTAssertEqual(wrongOld.stderr, Sentence.authFailed)
        // An empty new passphrase is a usage error.
        let empty = try h.run(["set-keychain-password"], input: "\(newPass)\n\n")
        XCTAssertEqual(empty.status, 2, "\(empty)")
        // The new passphrase also opens a fresh daemon.
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: newPass + "\n").status, 0)
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n")
    }

    func testShowKeychainInfoCountsItemsPerClass() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "ak2", "-w", "x"]).status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "dku", "-w", "x", "--accessible", "dku"]).status, 0)
        XCTAssertEqual(try h.run(["add-internet-password", "-s", "example.com", "-a", "i", "-w", "x", "--accessible", "Always"]).status, 0)
        let info = try h.info()
        XCTAssertEqual(info["items"] as? Int, 5)
        XCTAssertEqual(info["count.ak"] as? Int, 2)
        XCTAssertEqual(info["count.ck"] as? Int, 1)
        XCTAssertEqual(info["count.dk"] as? Int, 1)
        XCTAssertEqual(info["count.dku"] as? Int, 1)
        XCTAssertEqual(info["count.aku"] as? Int, 0)
        XCTAssertEqual(info["count.cku"] as? Int, 0)
        XCTAssertEqual(info["count.akpu"] as? Int, 0)
        XCTAssertEqual(info["path"] as? String, h.vault)
        XCTAssertEqual(info["groups"] as? [String], ["default"])
        XCTAssertEqual(info["passphrase"] as? Bool, true)
        XCTAssertEqual(info["kdf-ops"] as? Int, 2)
        XCTAssertEqual(info["kdf-mem"] as? Int, 64 << 20)
        let text = try h.run(["show-keychain-info"]).stdout
        XCTAssertEqual(text, """
            Keychain "\(h.vault)" unlocked no-timeout
            items: 5
              ak (WhenUnlocked): 2
              ck (AfterFirstUnlock): 1
              dk (Always): 1
              dku (AlwaysThisDeviceOnly): 1
            kdf: argon2id, 2 passes, 64 MiB
            your access groups: default

            """)
        // Counts do not need the keys: they stay right while locked.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(try h.info()["count.ak"] as? Int, 2)
    }

    func testStopAndAutomaticRestart() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "dk", "-w", "dk-secret", "--accessible", "Always"]).status, 0)
        guard let pid = try h.daemonPID() else { return XCTFail("no daemon after create-keychain") }
        let status = try h.run(["status"])
        XCTAssertTrue(status.stdout.hasPrefix("\(h.vault): daemon pid \(pid), unlocked, socket \(h.runtimeDir)/"), status.stdout)
        let stop = try h.run(["stop"])
        XCTAssertEqual(stop.status, 0, "\(stop)")
        XCTAssertEqual(stop.stdout + stop.stderr, "")
        XCTAssertFalse(processAlive(pid), "the daemon process is gone")
        XCTAssertEqual(try h.run(["status"]).stdout, "\(h.vault): no daemon running\n")
        XCTAssertEqual(h.jsonObject(try h.run(["status", "--json"]).stdout)["daemon"] as? Bool, false)
        XCTAssertEqual(try h.run(["stop"]).status, 0, "stop without a daemon is fine")
        // The next command starts a new daemon that has never been unlocked: only Always items read.
        let dk = try find("dk")
        XCTAssertEqual(dk.status, 0, "\(dk)")
        XCTAssertEqual(dk.stdout, "dk-secret\n")
        try assertLockedOut("ak")
        try assertLockedOut("ck")
        guard let newPID = try h.daemonPID() else { return XCTFail("no daemon after restart") }
        XCTAssertNotEqual(newPID, pid)
        XCTAssertEqual(try h.info()["state"] as? String, "never-unlocked")
        XCTAssertEqual(try h.run(["unlock-keychain"], input: pass + "\n").status, 0)
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n")
        XCTAssertEqual(try find("ck").stdout, "ck-secret\n")
        XCTAssertEqual(try h.daemonPID(), newPID, "one daemon per vault")
    }

    func testForegroundDaemon() throws {
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLIHarness.binary)
        p.arguments = ["daemon", h.vault]
        p.environment = h.environment
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        XCTAssertTrue(try h.waitUntil(5) { try h.daemonPID() == p.processIdentifier }, "the foreground daemon serves the vault")
        XCTAssertEqual(try h.run(["unlock-keychain"], input: pass + "\n").status, 0)
        XCTAssertEqual(try find("ak").stdout, "ak-secret\n")
        // A second daemon for the same vault refuses to start.
        let second = try h.run(["daemon"])
        XCTAssertEqual(second.status, 1, "\(second)")
        XCTAssertTrue(second.stderr.contains("a daemon is already serving \(h.vault)"), second.stderr)
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let deadline = Date().addingTimeInterval(5)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        XCTAssertFalse(p.isRunning, "stop ends the foreground daemon")
        if !p.isRunning { XCTAssertEqual(p.terminationStatus, 0) }
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(log.hasPrefix("keychainfs-daemon: serving \(h.vault) at \(h.runtimeDir)/"), log)
        XCTAssertTrue(log.contains("keychainfs-daemon: unlocked by uid=0 "), log)
    }

    func testSIGTERMStopsTheDaemonAndRemovesItsSocket() throws {
        guard let pid = try h.daemonPID() else { return XCTFail("no daemon") }
        XCTAssertEqual(kill(pid, SIGTERM), 0)
        XCTAssertTrue(h.waitUntil(3) { !processAlive(pid) }, "SIGTERM ends the daemon")
        let sockets = (try? FileManager.default.contentsOfDirectory(atPath: h.runtimeDir))?.filter { $0.hasSuffix(".sock") } ?? []
        XCTAssertEqual(sockets, [], "the socket is removed")
        XCTAssertEqual(try h.run(["status"]).stdout, "\(h.vault): no daemon running\n")
    }
}
