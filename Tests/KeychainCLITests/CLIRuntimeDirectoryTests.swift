import Foundation
import KeychainTestSupport
import XCTest

/// The shared runtime directory `/tmp/keychainfs-UID` taken by someone else first: clients name
/// the directory and the reason, start nothing there, and the vault's owner falls back to its
/// login runtime directory `/run/user/UID/keychainfs` when that exists.
final class CLIRuntimeDirectoryTests: XCTestCase {
    var h: CLIHarness!
    var owner = "", squatter = ""
    var ownerUID: uid_t = 0, squatterUID: uid_t = 0
    var home = ""
    /// What this test created under /run, to remove afterwards.
    var createdUnderRun: [String] = []

    var shared: String { "/tmp/keychainfs-\(ownerUID)" }
    var loginDir: String { "/run/user/\(ownerUID)" }

    override func setUpWithError() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root to create users") }
        let suffix = String((0..<6).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
        owner = "kcfso" + suffix
        squatter = "kcfss" + suffix
        for u in [owner, squatter] {
            guard runTool(["/usr/sbin/useradd", "-M", "-N", "-s", "/usr/sbin/nologin", u]) == 0, getpwnam(u) != nil else {
                throw XCTSkip("could not create the test user \(u)")
            }
        }
        ownerUID = getpwnam(owner)!.pointee.pw_uid
        squatterUID = getpwnam(squatter)!.pointee.pw_uid
        removeShared()   // a uid reused from an earlier run
        h = try CLIHarness()
        home = h.dir + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
        chown(home, ownerUID, getpwnam(owner)!.pointee.pw_gid)
        chmod(home, 0o700)
        // Clients find the socket from the vault path alone, as outside the harness.
        h.environment["KEYCHAINFS_RUNTIME_DIR"] = nil
        h.environment["KEYCHAINFS_VAULT"] = home + "/login.vault"
        h.environment["KEYCHAINFS_DEVICE_KEY"] = home + "/device.key"
        h.environment["HOME"] = home
        // The owner's vault, made while its daemon lived elsewhere.
        let made = try asOwner(["create-keychain", "--kdf", "interactive"], input: "pass phrase 1\n",
                               env: ["KEYCHAINFS_RUNTIME_DIR": home + "/run"])
        XCTAssertEqual(made.status, 0, "\(made)")
        XCTAssertEqual(try asOwner(["add-generic-password", "-s", "svc", "-a", "acct", "-w", "-"], input: "secret",
                                   env: ["KEYCHAINFS_RUNTIME_DIR": home + "/run"]).status, 0)
        XCTAssertEqual(try asOwner(["stop"], env: ["KEYCHAINFS_RUNTIME_DIR": home + "/run"]).status, 0)
    }

    override func tearDown() {
        if let h {
            _ = try? asOwner(["stop"])
            h.tearDown()
        }
        h = nil
        removeShared()
        for dir in createdUnderRun.reversed() { try? FileManager.default.removeItem(atPath: dir) }
        // userdel refuses a user that still has a process: a stopped daemon may take a moment.
        for u in [owner, squatter] where !u.isEmpty {
            var tries = 0
            while getpwnam(u) != nil && runTool(["/usr/sbin/userdel", u]) != 0 && tries < 100 {
                tries += 1
                usleep(100_000)
            }
        }
        super.tearDown()
    }

    func removeShared() {
        if ownerUID != 0 { _ = runTool(["/bin/rm", "-rf", "/tmp/keychainfs-\(ownerUID)"]) }
    }

    func setpriv(_ user: String) -> [String] {
        let pw = getpwnam(user)!.pointee
        return ["/usr/bin/setpriv", "--reuid", String(pw.pw_uid), "--regid", String(pw.pw_gid), "--clear-groups"]
    }

    func asOwner(_ args: [String], input: String? = nil, env: [String: String] = [:]) throws -> CLIHarness.Result {
        try h.run(args, input: input, env: env, prefix: setpriv(owner))
    }

    /// Runs a tool (mkdir, ln, touch) as the squatter.
    func squat(_ argv: [String]) throws {
        let r = try Spawn.run(setpriv(squatter) + argv, environment: [:], input: Data(), timeout: 10)
        XCTAssertEqual(r.status, 0, "\(argv): \(String(decoding: r.err, as: UTF8.self))")
    }

    func refusal(_ reason: String) -> String {
        "keychainfs: I/O error.\n"
            + "keychainfs: refusing the runtime directory \(shared): \(reason), so another user could stand in for the vault's daemon. "
            + "Remove it (root can: rm -r \(shared)), or set KEYCHAINFS_RUNTIME_DIR, for every user of the vault, "
            + "to a directory that only the vault's owner can write.\n"
    }

    func assertRefused(_ reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
        for args in [["find-generic-password", "-s", "svc", "-w"], ["show-keychain-info"]] {
            let r = try asOwner(args)
            XCTAssertEqual(r.status, 220, "\(args): \(r)", file: file, line: line)
            XCTAssertEqual(r.stdout, "", file: file, line: line)
            XCTAssertEqual(r.stderr, refusal(reason), file: file, line: line)
        }
        XCTAssertTrue(h.daemons().isEmpty, "no daemon was started", file: file, line: line)
    }

    func testASquattedDirectoryIsNamedWithTheReason() throws {
        try squat(["/bin/mkdir", "-m", "0755", shared])
        try assertRefused("it belongs to uid \(squatterUID), not to the vault's owner (uid \(ownerUID))")
        let inside = try FileManager.default.contentsOfDirectory(atPath: shared)
        XCTAssertEqual(inside, [], "nothing of the owner's went into the squatted directory")
        // Another user of the vault gets the same explanation.
        let other = try h.run(["find-generic-password", "-s", "svc"], prefix: setpriv(squatter))
        XCTAssertEqual(other.status, 220, "\(other)")
        XCTAssertEqual(other.stderr, refusal("it belongs to uid \(squatterUID), not to the vault's owner (uid \(ownerUID))"))

        removeShared()
        try squat(["/bin/ln", "-s", "/tmp", shared])
        try assertRefused("it is a symbolic link")
        removeShared()
        try squat(["/usr/bin/touch", shared])
        try assertRefused("it is not a directory")
        removeShared()
        // The owner's own directory, but writable by everyone.
        let made = try Spawn.run(setpriv(owner) + ["/bin/mkdir", "-m", "0777", shared], environment: [:], input: Data(), timeout: 10)
        XCTAssertEqual(made.status, 0)
        chmod(shared, 0o777)  // past the umask
        try assertRefused("other users may write to it (mode 0777)")

        // Once it is gone the vault works again, through the shared directory.
        removeShared()
        XCTAssertEqual(try asOwner(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(try asOwner(["find-generic-password", "-s", "svc", "-w"]).stdout, "secret\n")
        XCTAssertTrue(try asOwner(["status"]).stdout.contains("socket \(shared)/"))
    }

    func testTheOwnerFallsBackToItsLoginRuntimeDirectory() throws {
        try squat(["/bin/mkdir", "-m", "0755", shared])
        // What logind makes at login: /run/user/UID, the owner's, mode 0700.
        var st = stat()
        XCTAssertNotEqual(lstat(loginDir, &st), 0, "\(loginDir) exists already")
        for dir in ["/run/user", loginDir] where lstat(dir, &st) != 0 {
            XCTAssertEqual(mkdir(dir, 0o755), 0, "mkdir \(dir)")
            createdUnderRun.append(dir)
        }
        chown(loginDir, ownerUID, getpwnam(owner)!.pointee.pw_gid)
        chmod(loginDir, 0o700)

        let unlocked = try asOwner(["unlock-keychain"], input: "pass phrase 1\n")
        XCTAssertEqual(unlocked.status, 0, "\(unlocked)")
        let found = try asOwner(["find-generic-password", "-s", "svc", "-w"])
        XCTAssertEqual(found.status, 0, "\(found)")
        XCTAssertEqual(found.stdout, "secret\n")
        let status = try asOwner(["status"])
        XCTAssertTrue(status.stdout.contains("socket \(loginDir)/keychainfs/"), status.stdout)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: shared), [])
        // Root finds the same daemon; a user who cannot enter /run/user/UID is told why not.
        let pid = try h.daemonPID()
        XCTAssertNotNil(pid)
        let rootStatus = try h.run(["status"]).stdout
        XCTAssertTrue(rootStatus.contains("daemon pid \(pid ?? 0), ") && rootStatus.contains("socket \(loginDir)/keychainfs/"), rootStatus)
        let other = try h.run(["find-generic-password", "-s", "svc"], prefix: setpriv(squatter))
        XCTAssertEqual(other.status, 220, "\(other)")
        XCTAssertEqual(other.stderr, refusal("it belongs to uid \(squatterUID), not to the vault's owner (uid \(ownerUID))"))
        // The daemon stays where it is when the squat goes: one daemon for the vault.
        removeShared()
        XCTAssertEqual(try h.daemonPID(), pid)
        XCTAssertEqual(try asOwner(["find-generic-password", "-s", "svc", "-w"]).stdout, "secret\n")
        XCTAssertEqual(h.daemons().count, 1)
    }
}
