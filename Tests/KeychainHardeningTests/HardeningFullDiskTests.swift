import Foundation
import KeychainTestSupport
import XCTest

/// Issue 13 (PRODUCT 11 "Fail closed"): a full file system under the back-off record or the audit
/// log refuses what it cannot record, and corrupts neither. Real tmpfs mounts, filled with a
/// ballast file that is freed afterwards.
final class HardeningFullDiskTests: MountTestCase {
    private var tmpfs: [String] = []

    override func tearDown() {
        // The daemon keeps files open on the tmpfs: stop it (and unmount FUSE) before the tmpfs goes.
        for point in mountpoints.reversed() { forceUnmount(point) }
        if let h {
            _ = try? h.run(["stop"], timeout: 10)
            for d in h.daemons() { kill(d.pid, SIGKILL) }
            _ = h.waitUntil(5) { h.daemons().isEmpty }
        }
        for point in tmpfs.reversed() {
            if umount2(point, 0) != 0 { umount2(point, Int32(MNT_DETACH)) }
            if isMountPoint(point) { XCTFail("\(point) is still mounted") }
        }
        super.tearDown()
    }

    /// A fresh tmpfs of `size` (mode 0755, as a runtime directory must be) in the scratch dir.
    private func smallFileSystem(_ name: String, size: String) throws -> String {
        let point = h.dir + "/" + name
        try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: false)
        let m = try runProgram(["/bin/mount", "-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", point])
        guard m.status == 0 else { throw XCTSkip("cannot mount a tmpfs here: \(m)") }
        tmpfs.append(point)
        return point
    }

    /// Writes `path` until the file system has not one page left; returns the bytes written.
    @discardableResult
    private func fill(_ path: String) throws -> Int {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw MountFailed(description: "open \(path): errno \(errno)") }
        defer { close(fd) }
        var total = 0
        for chunk in [64 << 10, 4096, 512, 1] {
            let bytes = [UInt8](repeating: 0x42, count: chunk)
            while case let n = bytes.withUnsafeBytes({ write(fd, $0.baseAddress, chunk) }), n > 0 { total += n }
            XCTAssertEqual(errno, ENOSPC, "the ballast stops at a full file system")
        }
        return total
    }

    private func file(_ path: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path) ?? Data()) }

    // MARK: The back-off record

    /// With the runtime directory full, no attempt is checked (not even the right passphrase), the
    /// back-off file stays as it was, and once there is room the back-off counts on.
    func testFullRuntimeDirectoryRefusesUnlockAttemptsAndKeepsTheBackOff() throws {
        signal(SIGPIPE, SIG_IGN)
        XCTAssertEqual(try h.run(["stop"]).status, 0, "the harness daemon stops")
        XCTAssertTrue(h.waitUntil(5) { h.daemons().isEmpty })
        let run = try smallFileSystem("run-small", size: "256k")
        h.environment["KEYCHAINFS_RUNTIME_DIR"] = run
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0, "a daemon with its runtime directory on the tmpfs")

        let first = try h.run(["unlock-keychain"], input: "wrong 0\n")
        XCTAssertEqual(first.status, 51, "\(first)")
        let lockoutFiles = try FileManager.default.contentsOfDirectory(atPath: run).filter { $0.hasSuffix(".lockout") }
        XCTAssertEqual(lockoutFiles.count, 1, "one back-off file: \(lockoutFiles)")
        let lockout = run + "/" + (lockoutFiles.first ?? "missing.lockout")
        let before = file(lockout)
        XCTAssertFalse(before.isEmpty, "the failure is recorded")

        let ballast = run + "/ballast"
        try fill(ballast)
        let start = Date()
        for i in 1...20 {
            let r = try h.run(["unlock-keychain"], input: "wrong \(i)\n", timeout: 30)
            XCTAssertEqual(r.status, 222, "guess \(i) is refused with errSecDiskFull: \(r)")
            XCTAssertEqual(r.stderr, "keychainfs: The disk is full.\n", "guess \(i)")
            XCTAssertEqual(file(lockout), before, "guess \(i) leaves the back-off file as it was")
        }
        let elapsed = Date().timeIntervalSince(start)
        print("full runtime directory: 20 guesses refused in \(elapsed) s")
        XCTAssertLessThan(elapsed, 20, "refusals do not hang")
        let right = try h.run(["unlock-keychain"], input: passphrase + "\n")
        XCTAssertEqual(right.status, 222, "not even the right passphrase is checked unrecorded: \(right)")
        XCTAssertEqual(try h.info()["state"] as? String, "never-unlocked")
        XCTAssertEqual(file(lockout), before)

        // Room again: the count goes on from the one failure, so the second guess from now waits 2 s.
        XCTAssertEqual(unlink(ballast), 0)
        let again = try h.run(["unlock-keychain"], input: "wrong 21\n")
        XCTAssertEqual(again.status, 51, "\(again)")
        let next = try h.run(["unlock-keychain"], input: "wrong 22\n")
        XCTAssertEqual(next.status, 51, "\(next)")
        XCTAssertGreaterThanOrEqual(next.elapsed, 1.0, "the back-off is back")
        XCTAssertFalse(file(lockout).isEmpty)
        let unlock = try h.run(["unlock-keychain"], input: passphrase + "\n")
        XCTAssertEqual(unlock.status, 0, "\(unlock)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: lockout), "a success clears the count")
    }

    /// A back-off file that is empty (as a full disk once left it) still delays the next guess,
    /// and one that cannot be read refuses the attempt instead of meaning "no failures".
    func testDamagedOrUnreadableBackOffFileIsNeverNoFailures() throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let socket = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: h.runtimeDir).first { $0.hasSuffix(".sock") })
        let lockout = h.runtimeDir + "/" + socket.dropLast(".sock".count) + ".lockout"
        XCTAssertTrue(FileManager.default.createFile(atPath: lockout, contents: Data()))
        let guess = try h.run(["unlock-keychain"], input: "wrong\n")
        XCTAssertEqual(guess.status, 51, "\(guess)")
        XCTAssertGreaterThanOrEqual(guess.elapsed, 0.9, "an empty back-off file counts as a failure")
        XCTAssertFalse(file(lockout).isEmpty, "and is replaced by a whole record")

        XCTAssertEqual(unlink(lockout), 0)
        XCTAssertEqual(mkdir(lockout, 0o700), 0, "a back-off file that cannot be read")
        let refused = try h.run(["unlock-keychain"], input: passphrase + "\n")
        XCTAssertEqual(refused.status, 220, "errSecIO, the passphrase unchecked: \(refused)")
        XCTAssertEqual(refused.stderr, "keychainfs: I/O error.\n")
        XCTAssertEqual(try h.info()["state"] as? String, "locked")
        XCTAssertEqual(rmdir(lockout), 0)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
    }

    // MARK: The audit log

    /// With the audit log's file system full, no secret is served (socket or mount), no line is
    /// cut, and once there is room the reads work and the chain verifies, counts included.
    func testFullAuditLogRefusesReadsAndKeepsTheChain() throws {
        if ProcessInfo.processInfo.environment["KEYCHAINFS_SANITIZER"] == "thread" {
            throw XCTSkip("under ThreadSanitizer the daemon ends at an unmount mid-test (docs/testing.md)")
        }
        signal(SIGPIPE, SIG_IGN)
        let small = try smallFileSystem("small", size: "2m")
        XCTAssertEqual(try h.run(["stop"]).status, 0, "the harness daemon stops")
        let vault = small + "/full.vault"
        try h.createVault(passphrase: passphrase, path: vault)
        h.environment["KEYCHAINFS_VAULT"] = vault
        let value = "full-log-" + Canary.make()
        try add("svc", "acct", value)
        XCTAssertEqual(try secret("svc", "acct"), value)
        let point = try mount()
        let path = point + "/svc/acct"
        XCTAssertEqual(FS.read(path).bytes, Array(value.utf8), "the mount reads while there is room")

        try fill(small + "/ballast")
        // One process opens the file 20 times: its first open is a line, the rest a pending count.
        let loop = try runProgram(["/bin/bash", "-c", "for i in $(seq 20); do read -r x < \"$1\" || [ -n \"$x\" ] || exit 1; done; echo $$", "_", path])
        XCTAssertEqual(loop.status, 0, "\(loop)")
        let loopPid = loop.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        // Lines still fit in the log's last page; reads go on until it is full, then are refused.
        var refusal: CLIHarness.Result?
        for served in 0..<100 {
            let r = try find("svc", "acct")
            if r.status != 0 {
                print("full audit log: \(served) reads served after the fill, then refused")
                refusal = r
                break
            }
            XCTAssertEqual(r.stdout, value + "\n")
        }
        let refused = try XCTUnwrap(refusal, "a read is refused once the audit log cannot grow")
        XCTAssertEqual(refused.status, 222, "errSecDiskFull: \(refused)")
        XCTAssertEqual(refused.stdout, "", "no secret")
        XCTAssertFalse(refused.stderr.contains(value))
        for _ in 0..<3 {
            let r = try find("svc", "acct")
            XCTAssertEqual(r.status, 222, "still refused: \(r)")
            XCTAssertEqual(r.stdout, "")
        }
        let cat = try runProgram(["/bin/cat", path])
        XCTAssertNotEqual(cat.status, 0, "cat through the mount fails: \(cat)")
        XCTAssertTrue(cat.stderr.contains("Input/output error"), "with EIO: \(cat)")
        XCTAssertEqual(cat.stdout, [])
        let direct = FS.read(path)
        assertErrno(direct.errno, EIO, "an open the log cannot show")
        XCTAssertNil(direct.bytes)
        let log = vault + ".audit"
        XCTAssertEqual(file(log).last, UInt8(ascii: "\n"), "no cut line at the end of the log")

        // Room again: the reads work, the counts are written and the chain holds.
        XCTAssertEqual(unlink(small + "/ballast"), 0)
        XCTAssertEqual(try secret("svc", "acct"), value)
        XCTAssertEqual(FS.read(path).bytes, Array(value.utf8))
        let verify = try h.run(["audit", "--verify"])
        XCTAssertEqual(verify.status, 0, "the chain holds after the full disk: \(verify)")
        let text = String(decoding: file(log), as: UTF8.self)
        XCTAssertTrue(text.hasSuffix("\n"))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        XCTAssertTrue(lines.allSatisfy { $0.count == 8 && $0[7].utf8.count == 64 }, "every line is whole:\n\(text)")
        var opens = 0
        for f in lines where f.count == 8 && f[3] == loopPid {
            if f[4] == "file-open-read" { opens += 1 }
            if f[4] == "file-open-read-repeated", let n = f[5].split(separator: "=").last.flatMap({ Int($0) }) { opens += n }
        }
        XCTAssertEqual(opens, 20, "every open of the shell is in the log")
        print("full audit log: the shell's opens: " + lines.filter { $0.count == 8 && $0[3] == loopPid }.map { "\($0[0]) \($0[4]) \($0[5])" }.joined(separator: "; "))

        // A restarted daemon continues the same chain.
        XCTAssertTrue(try unmount(point))
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertTrue(h.waitUntil(5) { h.daemons().isEmpty })
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
        XCTAssertEqual(try secret("svc", "acct"), value)
        let restarted = try h.run(["audit", "--verify"])
        XCTAssertEqual(restarted.status, 0, "after a restart: \(restarted)")
    }
}
