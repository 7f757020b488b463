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
}
