import Foundation
import KeychainTestSupport
import XCTest

/// Issue 7: a full disk (a 2 MiB tmpfs holding the vault) gives a clear error on write and loses
/// nothing already stored. The audit log is on the same disk: a read or unlock whose line cannot
/// be written is refused with errSecDiskFull (issue 13, HardeningFullDiskTests), never answered
/// with part of a secret.
final class HardeningDiskTests: MountTestCase {
    private var tmpfs: String?

    override func tearDown() {
        // The daemon keeps the vault open: stop it (and unmount FUSE) before the tmpfs goes.
        for point in mountpoints.reversed() { forceUnmount(point) }
        if let h {
            _ = try? h.run(["stop"], timeout: 10)
            for d in h.daemons() { kill(d.pid, SIGKILL) }
            _ = h.waitUntil(5) { h.daemons().isEmpty }
        }
        if let tmpfs {
            if umount2(tmpfs, 0) != 0 { umount2(tmpfs, Int32(MNT_DETACH)) }
            if isMountPoint(tmpfs) { XCTFail("\(tmpfs) is still mounted") }
        }
        super.tearDown()
    }

    func testFullDiskGivesClearErrorAndLosesNothing() throws {
        if ProcessInfo.processInfo.environment["KEYCHAINFS_SANITIZER"] == "thread" {
            throw XCTSkip("under ThreadSanitizer the daemon ends at an unmount mid-test: libfuse cancels its idle "
                          + "worker threads, which ThreadSanitizer treats as fatal (docs/testing.md)")
        }
        signal(SIGPIPE, SIG_IGN)
        let small = h.dir + "/small"
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: false)
        let m = try runProgram(["/bin/mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", small])
        guard m.status == 0 else { throw XCTSkip("cannot mount a tmpfs here: \(m)") }
        tmpfs = small
        XCTAssertEqual(try h.run(["stop"]).status, 0, "the harness vault's daemon stops")
        let vault = small + "/full.vault"
        let passphrase = "full disk"
        try h.createVault(passphrase: passphrase, path: vault)
        h.environment["KEYCHAINFS_VAULT"] = vault

        // Ballast to free later, as a user would delete some other file.
        let ballast = small + "/ballast"
        XCTAssertTrue(FileManager.default.createFile(atPath: ballast, contents: Data(count: 384 << 10)))
        var stored: [String: String] = [:]
        for i in 0..<5 {
            let v = "small-\(i)-" + Canary.text(32)
            XCTAssertEqual(try h.run(["add-generic-password", "-s", "disk", "-a", "small\(i)", "-w", "-"], input: v).status, 0)
            stored["small\(i)"] = v
        }
        // Fill: 180 KiB secrets until an add fails.
        var failure: CLIHarness.Result?
        for i in 0..<40 {
            let v = "big-\(i)-" + Canary.text(180 << 10)
            let r = try h.run(["add-generic-password", "-s", "disk", "-a", "big\(i)", "-w", "-"], input: v)
            if r.status == 0 {
                stored["big\(i)"] = v
            } else {
                failure = r
                break
            }
        }
        guard let failure else { return XCTFail("40 adds of 180 KiB fit in a 2 MiB tmpfs?") }
        print("full disk: \(stored.count) items stored; the failing add exits \(failure.status): \(failure.stderr.debugDescription)")
        XCTAssertGreaterThan(stored.count, 6, "some big adds fit before the disk filled")
        XCTAssertNotEqual(failure.status, 0)
        XCTAssertNotEqual(failure.status, 2, "not a usage error")
        XCTAssertTrue(failure.stderr.hasPrefix("keychainfs: ") && failure.stderr.hasSuffix("\n")
                      && failure.stderr.split(separator: "\n").count == 1,
                      "one clear line on stderr: \(failure.stderr.debugDescription)")
        XCTAssertTrue(failure.stdout.isEmpty)

        /// On the full disk a read may be refused for want of room for its audit line; with room
        /// every read must work.
        func checkAll(_ when: String, full: Bool) throws {
            for (acct, v) in stored.sorted(by: { $0.key < $1.key }) {
                let r = try h.run(["find-generic-password", "-s", "disk", "-a", acct, "-w"])
                if full && r.status == 222 {
                    XCTAssertEqual(r.stdout, "", "\(when): \(acct): a refused read prints nothing")
                    XCTAssertEqual(r.stderr, "keychainfs: The disk is full.\n")
                    continue
                }
                XCTAssertEqual(r.status, 0, "\(when): \(acct): \(r.status) \(r.stderr)")
                XCTAssertTrue(r.stdout == v + "\n", "\(when): \(acct) reads back whole (\(r.stdout.count) bytes, expected \(v.count + 1))")
            }
            let dump = try h.run(["dump-keychain", "-d", "--json"])
            if full && dump.status == 222 { return }
            XCTAssertEqual(dump.status, 0, "\(when): dump-keychain: \(dump.status) \(dump.stderr)")
            let items = (try? JSONSerialization.jsonObject(with: Data(dump.stdout.utf8))) as? [[String: Any]]
            XCTAssertEqual(items?.count, stored.count, "\(when): exactly the stored items")
        }
        try checkAll("after the failed add", full: true)

        // A write through the mount on the full disk fails at close and keeps the old secret.
        let point = try mount()
        let big = Array(Canary.text(400 << 10).utf8)
        let e = FS.write(point + "/disk/small0", big)
        print("full disk: a 400 KiB write through the mount gives \(FS.name(e))")
        XCTAssertNotEqual(e, FS.ok, "a write that cannot be stored fails")
        let old = FS.read(point + "/disk/small0")
        if old.errno != EIO {  // EIO: the open's audit line did not fit either
            XCTAssertEqual(old.bytes, Array(stored["small0"]!.utf8), "the old secret is intact")
        }
        let fresh = FS.write(point + "/disk/fresh", big)
        XCTAssertNotEqual(fresh, FS.ok, "a new file that cannot be stored fails")
        // creat(2) made the item, empty, before the write (MountServer.create commits it at
        // once, as a disk filesystem does); the failed content is not half there.
        let left = FS.read(point + "/disk/fresh")
        if left.errno == FS.ok {
            XCTAssertEqual(left.bytes, [], "a new file whose content could not be stored is empty, never partial")
            stored["fresh"] = ""
        } else if left.errno == EIO {
            // The open's audit line did not fit: whether creat(2) left the item is seen below.
            if try h.run(["find-generic-password", "-s", "disk", "-a", "fresh"]).status != 44 { stored["fresh"] = "" }
        } else {
            XCTAssertEqual(left.errno, ENOENT)
        }
        XCTAssertTrue(try unmount(point))
        try checkAll("after the failed mount writes", full: true)

        // Restart on the still-full disk: everything is there. An unlock whose audit line
        // cannot be written does not stand.
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertTrue(h.waitUntil(5) { h.daemons().isEmpty })
        let unlock = try h.run(["unlock-keychain"], input: passphrase + "\n")
        XCTAssertTrue(unlock.status == 0 || unlock.status == 222, "unlock on a full disk: \(unlock)")
        if unlock.status == 0 { try checkAll("after a restart on the full disk", full: true) }

        // Room again (the ballast goes): deletes and adds work.
        XCTAssertEqual(unlink(ballast), 0)
        if unlock.status != 0 { XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0) }
        XCTAssertEqual(try h.run(["delete-generic-password", "-s", "disk", "-a", "big0"]).status, 0, "delete on the full disk")
        stored["big0"] = nil
        let after = "after-" + Canary.text(16)
        let r = try h.run(["add-generic-password", "-s", "disk", "-a", "after", "-w", "-"], input: after)
        XCTAssertEqual(r.status, 0, "a small add after freeing space: \(r)")
        if r.status == 0 { stored["after"] = after }
        try checkAll("after freeing space", full: false)
    }
}
