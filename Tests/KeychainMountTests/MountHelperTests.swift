import Foundation
import KeychainTestSupport
import XCTest

/// Issue 6: mount(8) and fstab, container views, the PAM hook and the systemd units.
final class MountHelperTests: XCTestCase {
    var h: CLIHarness!
    var mounts: [String] = []
    var createdLinks: [String] = []
    // Unique to this run, so two runs on one machine never add or delete each other's users.
    static let suffix = String(TestAccounts.uniqueName().dropFirst(4))
    static let reader = "kchr" + suffix, userA = "kcha" + suffix, userB = "kchb" + suffix, outsider = "kchx" + suffix
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    override func setUpWithError() throws {
        h = try CLIHarness()
        // mount(8) runs helpers with a clean environment: the daemon must use the default
        // runtime directory, which the vault path alone determines.
        h.environment["KEYCHAINFS_RUNTIME_DIR"] = nil
        try h.createVault()
    }

    override func tearDown() {
        for m in mounts {
            _ = try? h.run(["unmount", m])
            umount2(m, Int32(MNT_DETACH))
        }
        for link in createdLinks { unlink(link) }
        h?.tearDown()
        h = nil
        super.tearDown()
    }

    /// Points `path` at the built binary unless something is installed there already.
    func link(_ path: String, to binary: String = CLIHarness.binary) {
        if access(path, F_OK) != 0, symlink(binary, path) == 0 { createdLinks.append(path) }
    }

    func mountpoint(_ name: String) throws -> String {
        let m = h.dir + "/" + name
        try FileManager.default.createDirectory(atPath: m, withIntermediateDirectories: true)
        mounts.append(m)
        return m
    }

    func user(_ name: String) -> (uid: String, gid: String) {
        _ = runTool(["/usr/sbin/useradd", "-M", "-N", name])
        let pw = getpwnam(name)!.pointee
        return (String(pw.pw_uid), String(pw.pw_gid))
    }

    func readAs(_ u: (uid: String, gid: String), _ path: String) throws -> Spawn.Outcome {
        try Spawn.run(["/usr/bin/setpriv", "--reuid", u.uid, "--regid", u.gid, "--clear-groups", "/bin/cat", path],
                      environment: [:], input: Data(), timeout: 10)
    }

    func testMountThroughMountAndFstabReadableByAnotherUser() throws {
        if ProcessInfo.processInfo.environment["KEYCHAINFS_SANITIZER"] == "thread" {
            throw XCTSkip("under ThreadSanitizer the daemon ends at an unmount mid-test: libfuse cancels its idle "
                          + "worker threads, which ThreadSanitizer treats as fatal (docs/testing.md)")
        }
        link("/usr/sbin/mount.fuse.keychainfs")
        XCTAssertEqual(try h.run(["group", "add", "public", "--mode", "0444"]).status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "--access-group", "public", "-w", "-"],
                                 input: "fstab-secret").status, 0)
        let mnt = try mountpoint("mnt")
        XCTAssertEqual(runTool(["/usr/bin/mount", "-t", "fuse.keychainfs", "-o", "allow_other", h.vault, mnt]), 0)
        let other = user(Self.reader)
        let read = try readAs(other, mnt + "/db/app")
        XCTAssertEqual(read.status, 0)
        XCTAssertEqual(String(decoding: read.out, as: UTF8.self), "fstab-secret")
        XCTAssertEqual(runTool(["/usr/bin/umount", mnt]), 0)
        XCTAssertFalse(try String(contentsOfFile: "/proc/mounts", encoding: .utf8).contains(" \(mnt) "))
        // The same through an fstab line.
        let fstab = h.dir + "/fstab"
        try "\(h.vault) \(mnt) fuse.keychainfs allow_other,ro 0 0\n".write(toFile: fstab, atomically: true, encoding: .utf8)
        XCTAssertEqual(runTool(["/usr/bin/mount", "-T", fstab, mnt]), 0)
        let mounted = try String(contentsOfFile: "/proc/mounts", encoding: .utf8)
        XCTAssertTrue(mounted.contains(" \(mnt) fuse.keychainfs ro,"), mounted)
        XCTAssertEqual(String(decoding: try readAs(other, mnt + "/db/app").out, as: UTF8.self), "fstab-secret")
        XCTAssertEqual(runTool(["/usr/bin/umount", mnt]), 0)
        _ = runTool(["/usr/sbin/userdel", Self.reader])
    }

    func testTwoContainerViewsOneLock() throws {
        let a = user(Self.userA), b = user(Self.userB), outsider = user(Self.outsider)
        defer { for u in [Self.userA, Self.userB, Self.outsider] { _ = runTool(["/usr/sbin/userdel", u]) } }
        for g in ["appa", "appb"] { XCTAssertEqual(try h.run(["group", "add", g]).status, 0) }
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "a", "--access-group", "appa", "-w", "-"], input: "secret-a").status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "b", "--access-group", "appb", "-w", "-"], input: "secret-b").status, 0)
        let ma = try mountpoint("view-a"), mb = try mountpoint("view-b")
        XCTAssertEqual(try h.run(["mount", "-o", "allow_other", "--groups", "appa", "--map-owner", "\(a.uid):\(a.gid)", ma]).status, 0)
        XCTAssertEqual(try h.run(["mount", "-o", "allow_other", "--groups", "appb", "--map-owner", "\(b.uid):\(b.gid)", mb]).status, 0)
        // Each view shows only its groups, owned by its container's uid.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: ma + "/db"), ["a"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mb + "/db"), ["b"])
        var st = stat()
        XCTAssertEqual(stat(ma + "/db/a", &st), 0)
        XCTAssertEqual(String(st.st_uid), a.uid)
        XCTAssertEqual(String(decoding: try readAs(a, ma + "/db/a").out, as: UTF8.self), "secret-a")
        XCTAssertEqual(String(decoding: try readAs(b, mb + "/db/b").out, as: UTF8.self), "secret-b")
        XCTAssertNotEqual(try readAs(b, ma + "/db/a").status, 0, "b cannot read a's view")
        XCTAssertNotEqual(try readAs(outsider, ma + "/db/a").status, 0)
        XCTAssertNotEqual(try readAs(outsider, mb + "/db/b").status, 0)
        // One lock empties both; one unlock restores both.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(stat(ma + "/db/a", &st), -1)
        XCTAssertEqual(stat(mb + "/db/b", &st), -1)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(String(decoding: try readAs(a, ma + "/db/a").out, as: UTF8.self), "secret-a")
        XCTAssertEqual(String(decoding: try readAs(b, mb + "/db/b").out, as: UTF8.self), "secret-b")
    }

    func testPAMHookUnlocksWithTheLoginPassword() throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        var env = h.environment
        env["PAM_USER"] = "root"
        env["KEYCHAINFS_BIN"] = CLIHarness.binary
        let hook = Self.repo + "/mount-helpers/pam-unlock"
        // pam_exec's expose_authtok writes the password and a NUL.
        let wrong = try Spawn.run([hook, h.vault], environment: env, input: Data("not it\0".utf8), timeout: 30)
        XCTAssertEqual(wrong.status, 51, String(decoding: wrong.err, as: UTF8.self))
        XCTAssertTrue(String(decoding: wrong.err, as: UTF8.self).hasSuffix("pam-unlock: cannot unlock \(h.vault) for root (keychainfs exit status 51)\n"),
                      String(decoding: wrong.err, as: UTF8.self))
        // Without an argument: the default vault (KEYCHAINFS_VAULT here), named the same way.
        let byDefault = try Spawn.run([hook], environment: env, input: Data("not it\0".utf8), timeout: 30)
        XCTAssertEqual(byDefault.status, 51)
        XCTAssertTrue(String(decoding: byDefault.err, as: UTF8.self).hasSuffix("pam-unlock: cannot unlock \(env["KEYCHAINFS_VAULT"] ?? "?") for root (keychainfs exit status 51)\n"))
        var nobody = env
        nobody["PAM_USER"] = "kcfs_no_such_user"
        let unknown = try Spawn.run([hook, h.vault], environment: nobody, input: Data("x\0".utf8), timeout: 30)
        XCTAssertEqual(unknown.status, 2)
        XCTAssertEqual(String(decoding: unknown.err, as: UTF8.self), "pam-unlock: no such user kcfs_no_such_user\n")
        XCTAssertEqual(try h.info()["state"] as? String, "locked")
        let right = try Spawn.run([hook, h.vault], environment: env, input: Data("pass phrase 1\0".utf8), timeout: 30)
        XCTAssertEqual(right.status, 0, String(decoding: right.err, as: UTF8.self))
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked")
    }

    func testSystemdUnitsVerify() throws {
        guard access("/usr/bin/systemd-analyze", X_OK) == 0 else { throw XCTSkip("systemd-analyze is not installed") }
        link("/usr/local/bin/keychainfs")  // the units' ExecStart and ExecStop must exist to verify
        link("/usr/local/bin/keychainfs-daemon", to: CLIHarness.engineBinary)
        let units = h.dir + "/units"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        let files = ["keychainfs@.service", "run-keychain.mount", "keychainfs-ssh-agent.socket", "keychainfs-ssh-agent.service"]
        for f in files {
            try FileManager.default.copyItem(atPath: Self.repo + "/mount-helpers/systemd/" + f, toPath: units + "/" + f)
        }
        let r = try Spawn.run(["/usr/bin/systemd-analyze", "verify"] + files.map { units + "/" + $0 },
                              environment: ["SYSTEMD_UNIT_PATH": units + ":", "PATH": "/usr/bin:/bin"], input: Data(), timeout: 60)
        XCTAssertEqual(r.status, 0, String(decoding: r.err, as: UTF8.self))
        XCTAssertEqual(String(decoding: r.err, as: UTF8.self), "")
    }
}
