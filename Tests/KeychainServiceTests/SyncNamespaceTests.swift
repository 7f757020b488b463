import Foundation
import KeychainTestSupport
import XCTest

/// Issue 17's three hosts on one machine: three vaults, device keys and daemons, each daemon in
/// a network namespace of its own (`ip netns exec`), PostgreSQL on the bridge address. What one
/// host adds, changes and deletes is seen on the others through the CLI and the mount; a host
/// cut off keeps working and converges once its link is back.
final class SyncNamespaceTests: XCTestCase {
    var net: TestNetwork?
    var circle: SyncHosts?
    var mounts: [String] = []

    override func tearDown() {
        for point in mounts.reversed() where MountTestCase.isMounted(point) {
            _ = try? runProgram(["/bin/umount", "-l", point], timeout: 20)
            if MountTestCase.isMounted(point) { umount2(point, Int32(MNT_DETACH)) }
        }
        circle?.tearDown()  // stops the daemons (over their sockets, then by pid) and the server
        net?.remove()
        for point in mounts where MountTestCase.isMounted(point) { XCTFail("\(point) is still mounted") }
        super.tearDown()
    }

    /// The mount's file of a generic password: its bytes, nil when it does not exist.
    func file(_ mount: String, _ service: String, _ account: String) -> String? {
        FS.read(mount + "/" + service + "/" + account).bytes.map { String(decoding: $0, as: UTF8.self) }
    }

    func testThreeHostsInNamespacesConvergeThroughTheCLIAndTheMountAndAfterACutOff() throws {
        guard access("/dev/fuse", R_OK | W_OK) == 0 else { throw XCTSkip("no /dev/fuse") }
        let net = try TestNetwork(hosts: 3)
        self.net = net
        let port = Int.random(in: 20_000..<60_000)
        let c = try SyncHosts(count: 3, tcp: (net.serverAddress, port, net.network))
        circle = c
        let h = c.hosts

        // Each daemon restarts inside its namespace, and reaches the server only through its veth.
        var pids: [Int32] = []
        for i in 0..<3 {
            XCTAssertEqual(try h[i].run(["stop"]).status, 0)
            let r = try h[i].run(["unlock-keychain"], input: "pass phrase 1\n", prefix: net.exec(i))
            XCTAssertEqual(r.status, 0, "\(r)")
            let pid = try XCTUnwrap(try h[i].daemonPID(), "a daemon runs for host \(i)")
            let ns = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net")
            XCTAssertEqual(ns, net.namespaceID(i), "host \(i)'s daemon is in its namespace")
            pids.append(pid)
        }
        try c.formCircle()

        for i in 0..<3 {
            let point = h[i].dir + "/mnt"
            try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: false)
            chmod(point, 0o755)
            mounts.append(point)
            let r = try h[i].run(["mount", point], timeout: 30)
            XCTAssertEqual(r.status, 0, "\(r)")
        }
        let account = "acct-\(c.tag)", service = "svc-\(c.tag)"

        // Add on 0, seen on 1 and 2; change on 1, seen on 0 and 2; delete on 2, gone on 0 and 1.
        try c.add(h[0], service, account, "added-\(c.tag)")
        for i in [1, 2] {
            XCTAssertTrue(try h[i].waitUntil(60) { try c.secret(h[i], service, account) == "added-\(c.tag)" }, c.shown(h[i]))
            XCTAssertTrue(h[i].waitUntil(30) { file(mounts[i], service, account) == "added-\(c.tag)" }, "mount of host \(i)")
        }
        try c.add(h[1], service, account, "changed-\(c.tag)", update: true)
        for i in [0, 2] {
            XCTAssertTrue(try h[i].waitUntil(60) { try c.secret(h[i], service, account) == "changed-\(c.tag)" }, c.shown(h[i]))
            XCTAssertTrue(h[i].waitUntil(30) { file(mounts[i], service, account) == "changed-\(c.tag)" }, "mount of host \(i)")
        }
        XCTAssertEqual(try h[2].run(["delete-generic-password", "-s", service, "-a", account]).status, 0)
        for i in [0, 1] {
            XCTAssertTrue(try h[i].waitUntil(60) { try c.secret(h[i], service, account) == nil }, c.shown(h[i]))
            XCTAssertTrue(h[i].waitUntil(30) { FS.read(mounts[i] + "/" + service + "/" + account).errno == ENOENT },
                          "mount of host \(i)")
        }

        // Host 2 is cut off: it notices, and keeps reading and writing its vault.
        try net.setLink(2, up: false)
        XCTAssertTrue(h[2].waitUntil(90) { c.status(h[2])["last-error"] != nil }, c.shown(h[2]))
        let offline = "offline-\(c.tag)", online = "online-\(c.tag)"
        try c.add(h[2], offline, account, "written-cut-off-\(c.tag)")
        XCTAssertEqual(try c.secret(h[2], offline, account), "written-cut-off-\(c.tag)")
        XCTAssertEqual(file(mounts[2], offline, account), "written-cut-off-\(c.tag)")
        try c.add(h[0], online, account, "written-meanwhile-\(c.tag)")
        XCTAssertTrue(try h[1].waitUntil(60) { try c.secret(h[1], online, account) != nil }, c.shown(h[1]))
        XCTAssertNil(try c.secret(h[2], online, account), "nothing reaches a host cut off")

        // The link is back: both ways converge.
        try net.setLink(2, up: true)
        XCTAssertTrue(h[2].waitUntil(120) { file(mounts[2], online, account) == "written-meanwhile-\(c.tag)" }, c.shown(h[2]))
        for i in [0, 1] {
            XCTAssertTrue(h[i].waitUntil(120) { file(mounts[i], offline, account) == "written-cut-off-\(c.tag)" }, c.shown(h[i]))
        }
        XCTAssertTrue(h[2].waitUntil(60) { c.status(h[2])["last-error"] == nil }, c.shown(h[2]))
        // The same daemons all along, each still in its namespace.
        XCTAssertEqual(try (0..<3).map { try h[$0].daemonPID() ?? -1 }, pids)
    }
}
