import Foundation
import KeychainTestSupport
import XCTest

/// Issue 6: `watch` reports changes within a second, `on_change` runs once per change, and the
/// version attribute counts changes.
final class CLIWatchTests: XCTestCase {
    var h: CLIHarness!
    var mnt: String!

    override func setUpWithError() throws {
        h = try CLIHarness()
        try h.createVault()
        mnt = h.dir + "/mnt"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
    }

    override func tearDown() {
        _ = try? h.run(["unmount", mnt])
        umount2(mnt, Int32(MNT_DETACH))
        h?.tearDown()
        h = nil
        super.tearDown()
    }

    func startWatch(_ args: [String] = []) throws -> (Process, String) {
        let out = h.dir + "/watch-\(UUID().uuidString.prefix(6)).out"
        XCTAssertTrue(FileManager.default.createFile(atPath: out, contents: nil))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLIHarness.binary)
        p.arguments = ["watch"] + args
        p.environment = h.environment
        p.standardOutput = FileHandle(forWritingAtPath: out)
        p.standardError = FileHandle.nullDevice
        try p.run()
        // Wait until the daemon has the watcher: a first event proves the stream is live.
        usleep(300_000)
        return (p, out)
    }

    func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func testWatchReportsAnUpdateWithinASecond() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "-"], input: "one").status, 0)
        let (p, out) = try startWatch(["--json"])
        defer { p.terminate(); p.waitUntilExit() }
        let start = Date()
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "-", "-U"], input: "two").status, 0)
        XCTAssertTrue(h.waitUntil(1.0) { lines(out).count >= 1 }, "an event within a second")
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        let event = try JSONSerialization.jsonObject(with: Data(lines(out)[0].utf8)) as? [String: Any]
        XCTAssertEqual(event?["event"] as? String, "update")
        XCTAssertEqual(event?["service"] as? String, "db")
        XCTAssertEqual(event?["account"] as? String, "app")
        let time = try XCTUnwrap(event?["time"] as? String, "the time as text, as in the plain lines")
        XCTAssertNotNil(time.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"#, options: .regularExpression), time)
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertTrue(h.waitUntil(1.0) { lines(out).contains { $0.contains("\"lock\"") } })
    }

    /// `group add`, `set` and `remove` each send a `groups` event before they answer, to every
    /// watcher (a filtered one too): the Secret Service provider keeps the table until one comes.
    func testGroupChangesAreWatched() throws {
        let (p, out) = try startWatch()
        defer { p.terminate(); p.waitUntilExit() }
        let (q, filtered) = try startWatch(["-s", "web"])
        defer { q.terminate(); q.waitUntilExit() }
        let name = "g" + UUID().uuidString.prefix(6).lowercased()
        XCTAssertEqual(try h.run(["group", "add", name]).status, 0)
        XCTAssertEqual(try h.run(["group", "set", name, "--mode", "0440"]).status, 0)
        XCTAssertEqual(try h.run(["group", "remove", name]).status, 0)
        for file in [out, filtered] {
            XCTAssertTrue(h.waitUntil(5) { lines(file).count >= 3 }, "\(lines(file))")
            XCTAssertEqual(lines(file).map { $0.split(separator: " ").dropFirst().joined(separator: " ") },
                           ["groups", "groups", "groups"], "\(lines(file))")
        }
    }

    func testWatchFilterAndPlainLines() throws {
        let (p, out) = try startWatch(["-s", "web"])
        defer { p.terminate(); p.waitUntilExit() }
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "x", "-w", "-"], input: "1").status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "web", "-a", "y", "-w", "-"], input: "2").status, 0)
        XCTAssertTrue(h.waitUntil(1.0) { lines(out).count >= 1 })
        usleep(200_000)
        XCTAssertEqual(lines(out).count, 1, "only the web change: \(lines(out))")
        XCTAssertTrue(lines(out)[0].hasSuffix(" add web/y"), lines(out)[0])
    }

    func testOnChangeRunsOncePerChangeAndVersionIncreases() throws {
        let log = h.dir + "/changes"
        let mount = try h.run(["mount", "-o", "on_change=echo $KEYCHAINFS_EVENT $KEYCHAINFS_SERVICE/$KEYCHAINFS_ACCOUNT >> \(log)", mnt])
        XCTAssertEqual(mount.status, 0, "\(mount)")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "-"], input: "v1").status, 0)
        func version(_ account: String = "app") -> String? {
            FS.getxattr(mnt + "/db/" + account, "user.keychain.version").value.map { String(decoding: $0, as: UTF8.self) }
        }
        XCTAssertEqual(version(), "1")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "-", "-U"], input: "v2").status, 0)
        XCTAssertEqual(try h.run(["delete-generic-password", "-s", "db", "-a", "app"]).status, 0)
        XCTAssertTrue(h.waitUntil(2.0) { lines(log).count >= 3 })
        usleep(300_000)
        XCTAssertEqual(lines(log), ["add db/app", "update db/app", "delete db/app"])
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "again", "-w", "-"], input: "a").status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "again", "-l", "relabelled", "-w", "-", "-U"], input: "b").status, 0)
        XCTAssertEqual(version("again"), "2", "every change counts")
    }

    func testStatusShowsMountsTimerCountsAndAuditHead() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "-"], input: "x").status, 0)
        XCTAssertEqual(try h.run(["set-keychain-settings", "-t", "300"]).status, 0)
        XCTAssertEqual(try h.run(["mount", "-o", "ro", "--groups", "default", mnt]).status, 0)
        let r = try h.run(["status"])
        XCTAssertEqual(r.status, 0)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines[0].hasPrefix("\(h.vault): daemon pid ") && lines[0].contains(", unlocked, socket "), r.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("  idle lock in ") && $0.hasSuffix(" s") }, r.stdout)
        XCTAssertTrue(lines.contains("  items: 1 (ak 1)"), r.stdout)
        XCTAssertTrue(lines.contains("  mount: \(mnt!) (ro,groups=default)"), r.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("  audit log: ") && $0.contains(" entries, head ") }, r.stdout)
    }
}
