import Foundation
import KeychainTestSupport
import XCTest

/// PRODUCT 12: the mount lives in the asker's namespace, dead mounts are replaced and
/// re-established, and users who are not root unmount through fusermount3.
final class MountNamespaceTests: MountTestCase {
    var accounts = TestAccounts()

    override func tearDown() {
        super.tearDown()
        accounts.remove()
    }

    /// A fresh directory of the scratch dir (not mounted yet), unmounted in tearDown.
    func directory(_ name: String) throws -> String {
        let point = h.dir + "/" + name
        try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: false)
        chmod(point, 0o755)
        return point
    }

    func mountLines(_ point: String) -> Int {
        ((try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? "").split(separator: "\n")
            .filter { $0.split(separator: " ").dropFirst().first.map(String.init) == point }.count
    }

    func testDaemonInAPrivateNamespaceServesTheHostsMount() throws {
        try add("svc", "acct", "seen from the host")
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let pid = try h.startDaemon(inPrivateNamespace: true)
        XCTAssertNotEqual(readlinkText("/proc/\(pid)/ns/mnt"), readlinkText("/proc/self/ns/mnt"), "another namespace")
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
        let point = try directory("host-view")
        let r = try h.run(["mount", point])
        XCTAssertEqual(r.status, 0, "\(r)")
        defer { forceUnmount(point) }
        XCTAssertEqual(FS.read(point + "/svc/acct").bytes, Array("seen from the host".utf8))
        XCTAssertTrue(try h.run(["status"]).stdout.contains("mount: \(point) (rw)"))
        XCTAssertEqual(h.jsonObject(try h.run(["status", "--json"]).stdout)["mounts"] as? [String], ["\(point) (rw)"],
                       "mounts as an array")
        XCTAssertEqual(try h.run(["unmount", point]).status, 0)
        XCTAssertEqual(mountLines(point), 0, "nothing left in /proc/mounts")
        XCTAssertEqual(try h.daemonPID(), pid, "the daemon still serves")
    }

    func testKilledDaemonsMountIsStaleThenReplacedAndReestablished() throws {
        try add("svc", "acct", "after the crash", ["--accessible", "Always"])
        let point = try mount()
        guard let first = try h.daemonPID() else { return XCTFail("no daemon") }
        XCTAssertEqual(kill(first, SIGKILL), 0)
        XCTAssertTrue(h.waitUntil(5) { !processAlive(first) })
        let status = try h.run(["status"])
        XCTAssertTrue(status.stdout.contains("no daemon running"), status.stdout)
        XCTAssertTrue(status.stdout.contains("mount: \(point) (stale)"), status.stdout)
        // A restarted daemon re-establishes the recorded mount before it answers.
        XCTAssertEqual(try h.run(["show-keychain-info"]).status, 0)
        XCTAssertEqual(FS.read(point + "/svc/acct").bytes, Array("after the crash".utf8))
        XCTAssertEqual(mountLines(point), 1, "one mount, not a stack")
        // Killed again, and this time the next mount replaces the dead one itself.
        guard let second = try h.daemonPID() else { return XCTFail("no daemon") }
        XCTAssertEqual(kill(second, SIGKILL), 0)
        XCTAssertTrue(h.waitUntil(5) { !processAlive(second) })
        let again = try h.run(["mount", point])
        XCTAssertEqual(again.status, 0, "\(again)")
        XCTAssertEqual(FS.read(point + "/svc/acct").bytes, Array("after the crash".utf8))
        XCTAssertEqual(mountLines(point), 1)
        XCTAssertTrue(try unmount(point))
        XCTAssertEqual(mountLines(point), 0)
    }

    func testMountErrorsNameTheProblem() throws {
        let point = try mount()
        let twice = try h.run(["mount", point])
        XCTAssertEqual(twice.status, 45, "\(twice)")
        XCTAssertTrue(twice.stderr.contains("\(point) is already mounted"), twice.stderr)
        XCTAssertEqual(mountLines(point), 1, "the first mount stays alone")
        let missing = try h.run(["mount", h.dir + "/no-such-dir"])
        XCTAssertEqual(missing.status, 2, "\(missing)")
        XCTAssertTrue(missing.stderr.contains("no such directory"), missing.stderr)
        let file = h.dir + "/a-file"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data()))
        let notDir = try h.run(["mount", file])
        XCTAssertEqual(notDir.status, 2, "\(notDir)")
        XCTAssertTrue(notDir.stderr.contains("is not a directory"), notDir.stderr)
    }

    func testOwnerWhoIsNotRootMountsAndUnmounts() throws {
        // Changing the device's mode here would change it under other runs on this machine.
        var device = stat()
        XCTAssertEqual(stat("/dev/fuse", &device), 0)
        try XCTSkipUnless(device.st_mode & 0o006 == 0o006,
                          "/dev/fuse is not 0666 (Debian's udev rule); scripts/setup.sh sets it, fusermount3 needs it")
        let user = try accounts.makeUser()
        let home = h.dir + "/home-" + user.name
        try FileManager.default.createDirectory(atPath: home + "/mnt", withIntermediateDirectories: true)
        for p in [home, home + "/mnt"] { chown(p, user.uid, user.gid) }
        let env = ["PATH": "/usr/bin:/bin", "HOME": home, "KEYCHAINFS_RUNTIME_DIR": home + "/run",
                   "KEYCHAINFS_DEVICE_KEY": home + "/device.key", "KEYCHAINFS_VAULT": home + "/user.vault"]
        func asUser(_ args: [String], _ input: String = "") throws -> Spawn.Outcome {
            try Spawn.run(user.setpriv(initGroups: false) + [CLIHarness.binary] + args, environment: env,
                          input: Data(input.utf8), timeout: 60)
        }
        defer {
            _ = try? asUser(["stop"])
            forceUnmount(home + "/mnt")
        }
        XCTAssertEqual(try asUser(["create-keychain", "--kdf", "interactive"], "user pass\n").status, 0)
        XCTAssertEqual(try asUser(["add-generic-password", "-s", "svc", "-a", "acct", "-w", "-"], "users secret").status, 0)
        let mounted = try asUser(["mount", home + "/mnt"])
        XCTAssertEqual(mounted.status, 0, String(decoding: mounted.err, as: UTF8.self))
        XCTAssertEqual(mountLines(home + "/mnt"), 1)
        let read = try Spawn.run(user.setpriv(initGroups: false) + ["/bin/cat", home + "/mnt/svc/acct"],
                                 environment: env, input: Data(), timeout: 10)
        XCTAssertEqual(String(decoding: read.out, as: UTF8.self), "users secret")
        let unmounted = try asUser(["unmount", home + "/mnt"])
        XCTAssertEqual(unmounted.status, 0, String(decoding: unmounted.err, as: UTF8.self))
        XCTAssertEqual(mountLines(home + "/mnt"), 0, "nothing left in /proc/mounts")
    }
}

func readlinkText(_ path: String) -> String {
    var buf = [CChar](repeating: 0, count: 256)
    let n = readlink(path, &buf, buf.count - 1)
    return n > 0 ? String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
}

extension CLIHarness {
    /// Runs `keychainfs daemon VAULT` in the background, in a private mount namespace when
    /// asked (`unshare --mount --propagation private`, as systemd's `PrivateTmp=` does), and
    /// returns its pid once it answers. tearDown stops it like any other of the harness's daemons.
    func startDaemon(inPrivateNamespace: Bool) throws -> pid_t {
        let prefix = inPrivateNamespace ? ["/usr/bin/unshare", "--mount", "--propagation", "private"] : []
        let argv = prefix + [CLIHarness.binary, "daemon", vault]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, dir + "/daemon.log", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        Spawn.closeFrom(3, &actions)
        let cargv = argv.map { strdup($0) } + [nil]
        let cenv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cargv + cenv { free(p) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, nil, cargv, cenv) == 0 else { throw Spawn.Failure(errno: errno, what: "spawn daemon") }
        let child = pid
        Thread.detachNewThread {  // reaps it, so that a killed daemon leaves no zombie
            var st: Int32 = 0
            while waitpid(child, &st, 0) < 0 && errno == EINTR {}
        }
        guard try waitUntil(10, { try daemonPID() == child }) else { throw Spawn.Failure(errno: 0, what: "daemon start") }
        return child
    }
}
