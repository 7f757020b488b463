import Foundation
import KeychainTestSupport
import XCTest

/// Mounting and unmounting, the page cache, mtime, and writes whose file is renamed while open.
final class MountLifecycleTests: MountTestCase {
    func testMountForms() throws {
        try add("svc", "acct", "secret")
        let mnt = try mount()
        // The same mountpoint twice: errSecDuplicateItem's exit status, named.
        let again = try h.run(["mount", mnt])
        XCTAssertEqual(again.status, 45, "\(again)")
        XCTAssertTrue(again.stderr.contains("already mounted"), again.stderr)
        // A missing directory: a usage error.
        let bad = try h.run(["mount", h.dir + "/no-such-dir"])
        XCTAssertEqual(bad.status, 2, "\(bad)")
        XCTAssertTrue(bad.stderr.contains("no such directory"), bad.stderr)
        // The mount.fuse3 form that /etc/fstab uses, with options mount(8) passes.
        let fstabPoint = h.dir + "/fstab"
        try FileManager.default.createDirectory(atPath: fstabPoint, withIntermediateDirectories: false)
        let fstab = try h.run([h.vault, fstabPoint, "-o", "ro,nodev,nosuid"])
        XCTAssertEqual(fstab.status, 0, "\(fstab)")
        XCTAssertTrue(MountTestCase.isMounted(fstabPoint))
        defer { forceUnmount(fstabPoint) }
        XCTAssertEqual(FS.read(fstabPoint + "/svc/acct").bytes, Array("secret".utf8))
        assertErrno(FS.write(fstabPoint + "/svc/acct", "x"), EROFS, "the fstab mount is read-only")
        // An unknown option is refused and mounts nothing.
        let unknownPoint = h.dir + "/unknown"
        try FileManager.default.createDirectory(atPath: unknownPoint, withIntermediateDirectories: false)
        let unknown = try h.run(["mount", "-o", "no_such_option", unknownPoint])
        XCTAssertNotEqual(unknown.status, 0, "\(unknown)")
        XCTAssertFalse(MountTestCase.isMounted(unknownPoint))

        XCTAssertTrue(try unmount(fstabPoint), "unmount of the fstab mount")
        XCTAssertTrue(try unmount(mnt))
        // Unmounting what is not mounted is an error.
        XCTAssertNotEqual(try h.run(["unmount", mnt]).status, 0)
    }

    /// An operator's `ps -L` or `top -H` tells a mount's threads (libfuse's workers) from the
    /// daemon's own.
    func testAMountsThreadsAreNamedForIt() throws {
        try add("svc", "acct", "secret")
        let mnt = try mount()
        XCTAssertEqual(FS.read(mnt + "/svc/acct").bytes, Array("secret".utf8))
        guard let pid = try h.daemonPID() else { return XCTFail("no daemon") }
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .newlines) }
        XCTAssertTrue(names.contains("kcfs-mount"), "\(names)")
        XCTAssertTrue(try unmount(mnt))
    }

    func testStopUnmountsAndUnmountWorksWithoutDaemon() throws {
        try add("svc", "acct", "secret", ["--accessible", "Always"])
        let first = try mount(), second = try mount("ro")
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertTrue(h.waitUntil(5) { !MountTestCase.isMounted(first) && !MountTestCase.isMounted(second) },
                      "stop unmounts the daemon's mounts")
        // Recorded: status names them, and `unmount` forgets one without starting a daemon.
        let status = try h.run(["status"])
        XCTAssertEqual(status.stdout, "\(h.vault): no daemon running\n  mount: \(first) (stopped: the next daemon mounts it again)\n"
                       + "  mount: \(second) (stopped: the next daemon mounts it again)\n")
        XCTAssertEqual(h.jsonObject(try h.run(["status", "--json"]).stdout)["stopped-mounts"] as? [String], [first, second])
        let forget = try h.run(["unmount", second])
        XCTAssertEqual(forget.status, 0, "\(forget)")
        XCTAssertEqual(forget.stdout + forget.stderr, "")
        XCTAssertEqual(h.daemons().count, 0, "unmount did not start a daemon")
        XCTAssertEqual(h.jsonObject(try h.run(["status", "--json"]).stdout)["stopped-mounts"] as? [String], [first])
        // The next daemon (any command starts it) mounts the other one again, before it answers.
        let info = try h.run(["show-keychain-info", "--json"])
        XCTAssertEqual(info.status, 0, "\(info)")
        XCTAssertEqual(h.jsonObject(info.stdout)["mounts"] as? [String], ["\(first) (rw)"], "back, and mounts as an array")
        XCTAssertEqual(FS.read(first + "/svc/acct").bytes, Array("secret".utf8))
        XCTAssertFalse(MountTestCase.isMounted(second), "the one unmounted while stopped stays down")
        XCTAssertTrue(try unmount(first))

        // A daemon that dies leaves a dead mount; unmount still removes it.
        let third = try mount()
        guard let pid = try h.daemonPID() else { return XCTFail("no daemon") }
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        XCTAssertTrue(h.waitUntil(5) { !processAlive(pid) })
        // The kernel answers ECONNABORTED for the request the daemon died on, ENOTCONN after.
        let dead = FS.stat(third + "/svc").errno
        XCTAssertTrue(dead == ENOTCONN || dead == ECONNABORTED, "a mount without its daemon: \(FS.name(dead))")
        let r = try h.run(["unmount", third])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertFalse(MountTestCase.isMounted(third))
        XCTAssertEqual(h.daemons().count, 0, "unmount did not start a daemon")
    }

    /// `mount` of a directory a stop took down, while no daemon runs, mounts it with its own
    /// options (not "already mounted" because the daemon it starts brought the old one back).
    func testMountAfterStopTakesTheNewOptions() throws {
        try add("svc", "acct", "secret", ["--accessible", "Always"])
        let point = try mount()
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertTrue(h.waitUntil(5) { !MountTestCase.isMounted(point) })
        let again = try h.run(["mount", "-o", "ro", point])
        XCTAssertEqual(again.status, 0, "\(again)")
        let lines = ((try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? "").split(separator: "\n")
            .filter { $0.split(separator: " ").dropFirst().first.map(String.init) == point }
        XCTAssertEqual(lines.count, 1, "one mount, not a stack: \(lines)")
        XCTAssertTrue(lines.first?.split(separator: " ").dropFirst(3).first?.hasPrefix("ro,") == true, "\(lines)")
        assertErrno(FS.write(point + "/svc/acct", "x"), EROFS, "the new options hold")
        // SIGTERM (systemd's stop) records them too.
        guard let pid = try h.daemonPID() else { return XCTFail("no daemon") }
        XCTAssertEqual(kill(pid, SIGTERM), 0)
        XCTAssertTrue(h.waitUntil(10) { !processAlive(pid) && !MountTestCase.isMounted(point) })
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "svc", "-w"]).stdout, "secret\n")
        XCTAssertEqual(FS.read(point + "/svc/acct").bytes, Array("secret".utf8), "back after SIGTERM and a new daemon")
    }

    /// Fraction of the file's pages in the page cache, from fincore(1).
    func cachedPages(_ path: String) throws -> Int? {
        let r = try runProgram(["/usr/bin/fincore", "--noheadings", "--output", "PAGES", path])
        return r.status == 0 ? Int(r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) : nil
    }

    func testNoPlaintextInThePageCacheByDefault() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/fincore") else { throw XCTSkip("no fincore") }
        try add("svc", "acct", String(repeating: "s", count: 5000))
        let mnt = try mount()
        let cached = try mount("kernel_cache")
        XCTAssertEqual(FS.read(mnt + "/svc/acct").bytes?.count, 5000)
        XCTAssertEqual(FS.read(cached + "/svc/acct").bytes?.count, 5000)
        XCTAssertEqual(try cachedPages(mnt + "/svc/acct"), 0, "default mode: direct I/O, nothing cached")
        XCTAssertEqual(try cachedPages(cached + "/svc/acct"), 2, "kernel_cache mode caches (the check can see pages)")
        // A lock drops the kernel_cache mount's pages with its entries, before the command returns.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        assertErrno(FS.stat(cached + "/svc/acct").errno, ENOENT, "kernel_cache: stat right after the lock")
        assertErrno(FS.stat(mnt + "/svc/acct").errno, ENOENT, "default: stat right after the lock")
    }

    func testKernelCacheHeldDescriptorAfterLock() throws {
        try add("svc", "acct", "cached secret")
        let mnt = try mount("kernel_cache")
        let fd = open(mnt + "/svc/acct", O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(FS.pread(fd, count: 100, offset: 0).bytes, Array("cached secret".utf8))
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let r = FS.pread(fd, count: 100, offset: 0)
        XCTAssertNil(r.bytes, "no plaintext from the page cache after the lock")
        assertErrno(r.errno, EACCES, "kernel_cache: read on a held descriptor after the lock")
    }

    func testMtimeMovesOnlyWithTheSecret() throws {
        try add("svc", "acct", "v1")
        let mnt = try mount()
        let path = mnt + "/svc/acct"
        guard let before = FS.stat(path).st else { return XCTFail("stat") }
        // Cross a second boundary so that a changed time can show.
        usleep(1_100_000)
        assertErrno(FS.setxattr(path, "user.keychain.label", "relabelled"), 0, "setxattr label")
        guard let relabelled = FS.stat(path).st else { return XCTFail("stat") }
        XCTAssertEqual(relabelled.st_mtim.tv_sec, before.st_mtim.tv_sec, "a label change keeps mtime")
        XCTAssertGreaterThan(relabelled.st_ctim.tv_sec, before.st_ctim.tv_sec, "and moves ctime")
        usleep(1_100_000)
        assertErrno(FS.write(path, "v2"), 0, "write")
        guard let written = FS.stat(path).st else { return XCTFail("stat") }
        XCTAssertGreaterThan(written.st_mtim.tv_sec, before.st_mtim.tv_sec, "a new secret moves mtime")
    }

    func testAccessibleAndGroupThroughXattrs() throws {
        try add("svc", "acct", "made ck through setxattr")
        let mnt = try mount()
        let path = mnt + "/svc/acct"
        assertErrno(FS.setxattr(path, "user.keychain.accessible", "AfterFirstUnlock"), 0, "setxattr accessible")
        XCTAssertEqual(FS.xattr(path, "user.keychain.accessible"), "ck")
        assertErrno(FS.setxattr(path, "user.keychain.accessible", "Sometimes"), EINVAL, "an unknown class")
        assertErrno(FS.setxattr(path, "user.keychain.access-group", "nosuchgroup"), EACCES, "a group the caller lacks")
        XCTAssertEqual(FS.xattr(path, "user.keychain.access-group"), "default")
        // Now AfterFirstUnlock, the file survives a lock.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(FS.read(path).bytes, Array("made ck through setxattr".utf8))
    }

    /// POSIX: a descriptor follows its file through a rename; what it writes before close lands
    /// in the renamed file (atomic-write helpers that rename before closing rely on it).
    func testWriteThenRenameOverTargetThenClose() throws {
        try add("svc", "target", "old contents", ["-l", "target label"])
        let mnt = try mount()
        let fd = open(mnt + "/svc/.target.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(Glibc.write(fd, "new contents", 12), 12)
        assertErrno(FS.check(rename(mnt + "/svc/.target.tmp", mnt + "/svc/target")), 0, "rename before close")
        let closed = close(fd)
        let target = try secret("svc", "target")
        let leftover = try find("svc", ".target.tmp").status
        XCTAssertEqual(closed, 0)
        XCTAssertEqual(target, "new contents")
        XCTAssertEqual(leftover, 44, "no temporary item is left")
        XCTAssertEqual(FS.list(mnt + "/svc").names, ["target"])
    }
}
