import Foundation
import KeychainTestSupport
import XCTest

/// Per-caller access groups in the Secret Service: on one bus shared by several uids, each D-Bus
/// caller gets the groups its own uid and groups are entitled to, as on the daemon's socket.
/// Real users made for the run: an outsider, and a member of the Unix group of the vault's `team`.
final class SecretServiceCallerTests: XCTestCase {
    var harness: CLIHarness!
    var bus: SessionBus!
    var outsider = "", member = "", unixGroup = ""
    var listeners: [SignalListener] = []
    var monitor: Process?

    override func setUpWithError() throws {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/secret-tool", "/usr/bin/setpriv", "/usr/sbin/useradd"] where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not installed")
        }
        guard geteuid() == 0 else { throw XCTSkip("making test users needs root") }
        let suffix = String((0..<6).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
        outsider = "kcfo" + suffix
        member = "kcfm" + suffix
        unixGroup = "kcfg" + suffix
        XCTAssertEqual(runTool(["/usr/sbin/groupadd", unixGroup]), 0)
        XCTAssertEqual(runTool(["/usr/sbin/useradd", "-M", "-N", "-s", "/usr/sbin/nologin", outsider]), 0)
        XCTAssertEqual(runTool(["/usr/sbin/useradd", "-M", "-N", "-s", "/usr/sbin/nologin", "-G", unixGroup, member]), 0)
        guard getpwnam(outsider) != nil, getpwnam(member) != nil else { throw XCTSkip("could not create test users") }
        harness = try CLIHarness()
        try harness.createVault()
        // `default` (owner only, 0400) stays first: the owner's default collection; then a group
        // the member's Unix group may read.
        XCTAssertEqual(try harness.run(["group", "add", "team", "--group", unixGroup, "--mode", "0440"]).status, 0)
        guard python("import secretstorage").status == 0 else { throw XCTSkip("python3-secretstorage is not installed") }
        bus = try SessionBus(harness: harness, otherUsers: true)
        try bus.startProvider()
    }

    override func tearDown() {
        for l in listeners { l.stop() }
        if let m = monitor, m.isRunning {
            m.terminate()
            m.waitUntilExit()
        }
        bus?.stop()
        harness?.tearDown()
        for u in [outsider, member] where !u.isEmpty { _ = runTool(["/usr/sbin/userdel", u]) }
        if !unixGroup.isEmpty { _ = runTool(["/usr/sbin/groupdel", unixGroup]) }
    }

    /// Runs a Python program as `user` (its uid, primary group and groups from /etc/group), or
    /// as the vault's owner, on the shared bus.
    func python(_ program: String, as user: String? = nil) -> CLIHarness.Result {
        let argv = ["/usr/bin/python3", "-B", "-c", program]
        guard let user, let pw = getpwnam(user) else { return bus?.run(argv) ?? runAsOwner(argv) }
        return bus.run(["/usr/bin/setpriv", "--reuid", String(pw.pointee.pw_uid), "--regid", String(pw.pointee.pw_gid),
                        "--init-groups", "--"] + argv)
    }

    private func runAsOwner(_ argv: [String]) -> CLIHarness.Result {
        guard let r = try? Spawn.run(argv, environment: ProcessInfo.processInfo.environment, input: Data(), timeout: 60) else {
            return CLIHarness.Result(status: -1, stdout: "", stderr: "")
        }
        return CLIHarness.Result(status: r.status, stdout: String(decoding: r.out, as: UTF8.self), stderr: "")
    }

    /// A program that, as its caller, reports what the service gives it: the collections, the
    /// default alias, what a search finds, and the D-Bus error (or secret) of reading, changing
    /// and adding where it names.
    func probe(ownerItem: String, teamItem: String, service: String) -> String {
        """
        import secretstorage
        from secretstorage.item import Item
        from secretstorage.util import DBusAddress, SS_PATH, SS_PREFIX
        from jeepney import new_method_call, Properties
        from jeepney.wrappers import unwrap_msg
        c = secretstorage.dbus_init()
        svc = DBusAddress(SS_PATH, "org.freedesktop.secrets", SS_PREFIX + "Service")
        def call(addr, method, sig, args):
            return unwrap_msg(c.send_and_get_reply(new_method_call(addr, method, sig, args)))
        def show(label, f):
            try:
                print(label, f())
            except Exception as e:
                print(label, getattr(e, "name", type(e).__name__))
        show("collections", lambda: sorted(unwrap_msg(c.send_and_get_reply(Properties(svc).get("Collections")))[0][1]))
        show("default", lambda: call(svc, "ReadAlias", "s", ("default",))[0])
        found = call(svc, "SearchItems", "a{ss}", ({"service": "\(service)"},))
        print("found", sorted(p.split("/")[-2] for p in found[0]))
        show("owner-secret", lambda: Item(c, "\(ownerItem)").get_secret().decode())
        show("team-secret", lambda: Item(c, "\(teamItem)").get_secret().decode())
        show("team-label", lambda: Item(c, "\(teamItem)").set_label("changed"))
        show("team-delete", lambda: Item(c, "\(teamItem)").delete())
        for g in ("default", "team"):
            show("create-" + g, lambda: secretstorage.Collection(c, SS_PATH + "/collection/" + g)
                 .create_item("x", {"service": "\(service)-new"}, b"x").item_path.split("/")[-2])
        show("lock", lambda: call(svc, "Lock", "ao", ([],)) and "done")
        """
    }

    func testEachCallerSeesOnlyTheGroupsItsOwnUidIsEntitledTo() throws {
        let service = "ss-" + UUID().uuidString.prefix(8)
        // The owner's item in its default collection (`default`), and one in `team`.
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "O", "service", service, "account", "owner"],
                               input: "owner only").status, 0)
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service, "-a", "team", "--access-group", "team", "-w", "-"],
                                       input: "for the team\n").status, 0)
        let paths = python("""
        import secretstorage
        c = secretstorage.dbus_init()
        for i in secretstorage.search_items(c, {"service": "\(service)"}):
            print(i.item_path.split("/")[-2], i.item_path)
        """)
        var path: [String: String] = [:]
        for line in paths.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2 { path[String(parts[0])] = String(parts[1]) }
        }
        guard let ownerItem = path["default"], let teamItem = path["team"] else {
            return XCTFail("the owner finds both items: \(paths)")
        }
        let program = probe(ownerItem: ownerItem, teamItem: teamItem, service: service)
        let denied = "org.freedesktop.DBus.Error.AccessDenied"

        // The outsider: no collection, no default, finds nothing, and direct access is refused.
        let out = python(program, as: outsider)
        XCTAssertEqual(out.status, 0, "\(out)")
        XCTAssertEqual(out.stdout, """
        collections []
        default /
        found []
        owner-secret \(denied)
        team-secret \(denied)
        team-label \(denied)
        team-delete \(denied)
        create-default \(denied)
        create-team \(denied)
        lock \(denied)

        """)

        // The member of team's Unix group reads team (mode 0440) and nothing of the owner's `default`;
        // it may not change team's items, add to it, or lock the vault.
        let m = python(program, as: member)
        XCTAssertEqual(m.status, 0, "\(m)")
        XCTAssertEqual(m.stdout, """
        collections ['/org/freedesktop/secrets/collection/team']
        default /org/freedesktop/secrets/collection/team
        found ['team']
        owner-secret \(denied)
        team-secret for the team
        team-label \(denied)
        team-delete \(denied)
        create-default \(denied)
        create-team \(denied)
        lock \(denied)

        """)

        // Nothing changed; the vault is still unlocked and the owner still reads both.
        XCTAssertEqual(try harness.run(["find-generic-password", "-s", service, "-a", "team", "-w"]).stdout, "for the team\n")
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", "owner"]).stdout, "owner only")
        XCTAssertEqual(try harness.run(["find-generic-password", "-s", service + "-new"]).status, 44)
    }

    func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// Signals go only to callers entitled to the item's group. The owner's listener receives
    /// ItemCreated for items of `default` and `team`, the member's only for `team`; an outsider's
    /// listener (a caller of the service too) and an outsider's `dbus-monitor` (not the bus's
    /// user: no monitor, only its match rules) receive none of them.
    func testSignalsReachOnlyTheCallersEntitledToTheItemsGroup() throws {
        guard access("/usr/bin/dbus-monitor", X_OK) == 0 else { throw XCTSkip("dbus-monitor is not installed") }
        guard python("import jeepney").status == 0 else { throw XCTSkip("python3-jeepney is not installed") }
        guard let pw = getpwnam(outsider) else { return XCTFail("no outsider") }
        let log = harness.dir + "/outsider-monitor.log"
        XCTAssertTrue(FileManager.default.createFile(atPath: log, contents: nil))
        let m = Process()
        m.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        m.arguments = ["--reuid", String(pw.pointee.pw_uid), "--regid", String(pw.pointee.pw_gid), "--init-groups", "--",
                       "/usr/bin/dbus-monitor", "--session"]
        m.environment = bus.environment
        m.standardOutput = FileHandle(forWritingAtPath: log)
        m.standardError = FileHandle.nullDevice
        try m.run()
        monitor = m
        // Its own NameAcquired: connected, its match rules added.
        XCTAssertTrue(harness.waitUntil(20) { read(log).contains("NameAcquired") }, "dbus-monitor did not start: \(read(log))")

        let owner = try SignalListener(bus: bus, name: "owner")
        let teamMember = try SignalListener(bus: bus, name: "member", user: member)
        let other = try SignalListener(bus: bus, name: "outsider", user: outsider)
        listeners = [owner, teamMember, other]

        let service = "sig-" + UUID().uuidString.prefix(8)
        // One item over D-Bus in the owner's `default`, one through the CLI in `team`.
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "O", "service", service, "account", "owner"],
                               input: "owner only").status, 0)
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service, "-a", "team", "--access-group", "team", "-w", "-"],
                                       input: "for the team\n").status, 0)
        func created(_ l: SignalListener, in group: String) -> Bool {
            l.signals.contains { $0.hasPrefix("ItemCreated /org/freedesktop/secrets/collection/\(group) ") }
        }
        XCTAssertTrue(harness.waitUntil(20) { created(owner, in: "default") && created(owner, in: "team") }, owner.text)

        // Every signal sent to the others before now is in their logs after a call of theirs.
        XCTAssertTrue(teamMember.sync(), teamMember.text)
        XCTAssertTrue(other.sync(), other.text)
        XCTAssertTrue(created(teamMember, in: "team"), teamMember.text)
        XCTAssertEqual(teamMember.signals.filter { $0.contains("/collection/default") }, [], teamMember.text)
        XCTAssertEqual(other.signals, [], other.text)

        // The monitor: a new connection's NameOwnerChanged (broadcast after the items' signals)
        // reaches it, so anything broadcast before it would be in the log by then.
        let before = read(log).components(separatedBy: "member=NameOwnerChanged").count
        XCTAssertEqual(bus.run(["/usr/bin/dbus-send", "--session", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                                "org.freedesktop.DBus.Peer.Ping"]).status, 0)
        XCTAssertTrue(harness.waitUntil(20) { read(log).components(separatedBy: "member=NameOwnerChanged").count > before }, read(log))
        XCTAssertFalse(read(log).contains("/org/freedesktop/secrets/collection"), read(log))
        XCTAssertFalse(read(log).contains("org.freedesktop.Secret"), read(log))
    }

    /// The unlock prompt's approval program is told who asks over D-Bus: the caller's uid and
    /// pid as the bus pinned them (`--uid`, `--pid`; its executable `?`), and this provider as
    /// the relay (`--via-uid`, `--via-pid`, `--via-exe`).
    func testTheUnlockProgramIsToldTheDBusCallersUid() throws {
        guard let pw = getpwnam(member) else { return XCTFail("no member") }
        let program = harness.dir + "/unlock.sh", calls = harness.dir + "/calls"
        try """
            #!/bin/sh
            echo "$@" >> \(calls)
            echo "pass phrase 1"
            """.write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        XCTAssertEqual(try harness.run(["set-keychain-settings", "--approval-program", program]).status, 0)
        XCTAssertEqual(try harness.run(["lock-keychain"]).status, 0)
        let r = python("""
            import os, secretstorage
            col = secretstorage.get_default_collection(secretstorage.dbus_init())
            print(os.getpid(), col.unlock(), col.is_locked())
            """, as: member)
        let words = r.stdout.split(separator: " ")
        XCTAssertEqual(words.dropFirst().joined(separator: " "), "False False\n", "\(r)")
        let args = try String(contentsOfFile: calls, encoding: .utf8)
        XCTAssertTrue(args.hasPrefix("--reason unlock --label keychain --uid \(pw.pointee.pw_uid) --pid \(words.first ?? "?") --exe ? "
                                     + "--via-uid \(geteuid()) --via-pid "), args)
        XCTAssertTrue(args.contains(" --via-exe /"), args)
        XCTAssertEqual(try harness.run(["show-keychain-info"]).stdout.contains("unlocked"), true)
    }

    /// A program run as `user` on the shared bus that reads one line of its standard input
    /// before each step: `lines()` gives what it printed until then.
    final class Conversation {
        let process = Process()
        let input = Pipe(), output = Pipe()
        private var buffered = Data()

        init(_ argv: [String], environment: [String: String]) throws {
            process.executableURL = URL(fileURLWithPath: argv[0])
            process.arguments = Array(argv.dropFirst())
            process.environment = environment
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// The next line it prints ("" when it ended).
        func line() -> String {
            while !buffered.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                buffered += chunk
            }
            guard let end = buffered.firstIndex(of: UInt8(ascii: "\n")) else { return "" }
            defer { buffered = Data(buffered[buffered.index(after: end)...]) }
            return String(decoding: buffered[buffered.startIndex..<end], as: UTF8.self)
        }

        func next() { input.fileHandleForWriting.write(Data("go\n".utf8)) }

        func end() {
            try? input.fileHandleForWriting.close()
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
    }

    /// The provider keeps the group table while the daemon's change stream brings no change of
    /// it: a `group set` that takes the member out of `team` (mode 0440 to 0400) refuses the
    /// member's very next call on its open connection, and giving the group back its mode lets
    /// the next one through again.
    func testAGroupSetAppliesToTheCallersNextCall() throws {
        guard let pw = getpwnam(member) else { return XCTFail("no member") }
        let service = "gs-" + UUID().uuidString.prefix(8)
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service, "-a", "team", "--access-group", "team", "-w", "-"],
                                       input: "for the team\n").status, 0)
        let program = """
            import sys, secretstorage
            c = secretstorage.dbus_init()
            item = list(secretstorage.search_items(c, {"service": "\(service)"}))[0]
            def secret():
                try:
                    return item.get_secret().decode()
                except Exception as e:
                    return getattr(e, "name", type(e).__name__)
            for step in ("before", "out", "back"):
                if step != "before":
                    sys.stdin.readline()
                print(step, secret(), flush=True)
            """
        let talk = try Conversation(["/usr/bin/setpriv", "--reuid", String(pw.pointee.pw_uid), "--regid", String(pw.pointee.pw_gid),
                                     "--init-groups", "--", "/usr/bin/python3", "-B", "-c", program], environment: bus.environment)
        defer { talk.end() }
        XCTAssertEqual(talk.line(), "before for the team")
        XCTAssertEqual(try harness.run(["group", "set", "team", "--mode", "0400"]).status, 0)
        talk.next()
        XCTAssertEqual(talk.line(), "out org.freedesktop.DBus.Error.AccessDenied")
        XCTAssertEqual(try harness.run(["group", "set", "team", "--mode", "0440"]).status, 0)
        talk.next()
        XCTAssertEqual(talk.line(), "back for the team")
    }

    /// A wrong passphrase from the approval program for the member's unlock prompt counts in the
    /// member's back-off, not in that of the provider (which relays every D-Bus caller's
    /// prompt): the back-off file gets a line for the member's uid and none for the provider's,
    /// and the owner's prompt after it unlocks.
    func testAnUnlockPromptsWrongPassphraseCountsAgainstItsDBusCaller() throws {
        guard let pw = getpwnam(member) else { return XCTFail("no member") }
        let program = harness.dir + "/unlock.sh"
        try """
            #!/bin/sh
            if [ "$5" = "--uid" ] && [ "$6" = "\(pw.pointee.pw_uid)" ]; then echo "wrong"; else echo "pass phrase 1"; fi
            """.write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        XCTAssertEqual(try harness.run(["set-keychain-settings", "--approval-program", program]).status, 0)
        XCTAssertEqual(try harness.run(["lock-keychain"]).status, 0)
        let unlock = """
            import secretstorage
            col = secretstorage.get_default_collection(secretstorage.dbus_init())
            print(col.unlock(), col.is_locked())
            """
        // secretstorage's unlock() answers whether the prompt was dismissed.
        let m = python(unlock, as: member)
        XCTAssertEqual(m.stdout, "True True\n", "\(m)")
        let names = try FileManager.default.contentsOfDirectory(atPath: harness.runtimeDir).filter { $0.hasSuffix(".lockout") }
        XCTAssertEqual(names.count, 1, "\(names)")
        let lines = try String(contentsOfFile: harness.runtimeDir + "/" + (names.first ?? "x"), encoding: .utf8)
            .split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        XCTAssertEqual(lines.filter { $0.first == String(pw.pointee.pw_uid) }.map { $0.dropFirst().first }, ["1"], "\(lines)")
        XCTAssertEqual(lines.filter { $0.first == String(geteuid()) && $0.dropFirst().first != "0" }.count, 0, "\(lines)")
        let o = python(unlock)
        XCTAssertEqual(o.stdout, "False False\n", "\(o)")
        XCTAssertEqual(try harness.run(["show-keychain-info"]).stdout.contains("unlocked"), true)
    }
}
