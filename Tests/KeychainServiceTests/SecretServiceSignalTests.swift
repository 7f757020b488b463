import Foundation
import KeychainTestSupport
import XCTest

/// Collection signals for changes made outside D-Bus: the CLI adds, updates and deletes, and a
/// real `dbus-monitor` on the private bus sees ItemCreated, ItemChanged and ItemDeleted.
final class SecretServiceSignalTests: XCTestCase {
    var harness: CLIHarness!
    var bus: SessionBus!
    var monitor: CollectionSignalMonitor?

    override func setUpWithError() throws {
        try CollectionSignalMonitor.requireTools()
        harness = try CLIHarness()
        try harness.createVault()
        bus = try SessionBus(harness: harness)
    }

    override func tearDown() {
        monitor?.stop()
        bus?.stop()
        harness?.tearDown()
    }

    /// Starts dbus-monitor on the collection signals; returns the file it writes.
    func startMonitor() throws -> String {
        let m = try CollectionSignalMonitor(bus: bus)
        monitor = m
        return m.log
    }

    func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// How many times `member` was signalled for the item whose path ends in `ref`.
    func count(_ member: String, _ ref: String, in log: String) -> Int {
        read(log).components(separatedBy: "member=\(member)\n   object path \"").dropFirst()
            .filter { $0.prefix(while: { $0 != "\"" }).hasSuffix("/" + ref) }.count
    }

    /// The persistent reference (hex) secret-tool reports for a service: `[/REF]` above its
    /// attributes, the last element of the item's path.
    func itemRef(service: String) -> String? {
        let r = bus.run(["/usr/bin/secret-tool", "search", "--all", "service", service])
        let text = r.stdout + r.stderr
        guard let open = text.range(of: "[/"), let close = text[open.upperBound...].firstIndex(of: "]") else { return nil }
        return String(text[open.upperBound..<close])
    }

    func testCLIAddUpdateAndDeleteAreSignalledOnTheCollection() throws {
        try bus.startProvider()
        let log = try startMonitor()
        let service = "sig-\(UUID().uuidString.prefix(8))"

        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service, "-a", "alice", "-w", "-"], input: "one\n").status, 0)
        let path = try XCTUnwrap(itemRef(service: service), "secret-tool finds the CLI's item")
        XCTAssertTrue(harness.waitUntil(20) { count("ItemCreated", path, in: log) == 1 }, "ItemCreated: \(read(log))")

        XCTAssertEqual(try harness.run(["add-generic-password", "-U", "-s", service, "-a", "alice", "-w", "-"], input: "two\n").status, 0)
        XCTAssertTrue(harness.waitUntil(20) { count("ItemChanged", path, in: log) == 1 }, "ItemChanged: \(read(log))")
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", "alice"]).stdout, "two")

        XCTAssertEqual(try harness.run(["delete-generic-password", "-s", service, "-a", "alice"]).status, 0)
        XCTAssertTrue(harness.waitUntil(20) { count("ItemDeleted", path, in: log) == 1 }, "ItemDeleted: \(read(log))")
    }

    func testAChangeMadeOverDBusIsSignalledOnce() throws {
        try bus.startProvider()
        let log = try startMonitor()
        let service = "once-\(UUID().uuidString.prefix(8))"
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "L", "service", service, "account", "a"], input: "x").status, 0)
        let path = try XCTUnwrap(itemRef(service: service))
        // A CLI change after it: once its signal is out, the feed has seen the D-Bus one too
        // (the daemon's events are in order), so a repeat would be in the log by then.
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service + "-cli", "-a", "b", "-w", "-"], input: "y\n").status, 0)
        let cliPath = try XCTUnwrap(itemRef(service: service + "-cli"))
        XCTAssertTrue(harness.waitUntil(20) { count("ItemCreated", cliPath, in: log) == 1 }, "\(read(log))")
        XCTAssertEqual(count("ItemCreated", path, in: log), 1, "\(read(log))")
    }

    func testLockingAndUnlockingIsNoDeletionNorCreation() throws {
        try bus.startProvider()
        let log = try startMonitor()
        let service = "lock-\(UUID().uuidString.prefix(8))"
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service, "-a", "a", "-w", "-"], input: "x\n").status, 0)
        let ref = try XCTUnwrap(itemRef(service: service))
        XCTAssertTrue(harness.waitUntil(20) { count("ItemCreated", ref, in: log) == 1 }, "\(read(log))")
        // An item readable while locked, so that a look while locked lists something.
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service + "-ck", "-a", "a", "--accessible", "AfterFirstUnlock",
                                        "-w", "-"], input: "y\n").status, 0)
        // Locked, the WhenUnlocked item is unlisted, not gone; unlocked, it is back, not new.
        XCTAssertEqual(try harness.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(try harness.run(["delete-generic-password", "-s", service + "-ck", "-a", "a"]).status, 0)
        XCTAssertEqual(try harness.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(try harness.run(["delete-generic-password", "-s", service, "-a", "a"]).status, 0)
        XCTAssertTrue(harness.waitUntil(20) { count("ItemDeleted", ref, in: log) >= 1 }, "\(read(log))")
        XCTAssertEqual(count("ItemDeleted", ref, in: log), 1, "\(read(log))")
        XCTAssertEqual(count("ItemCreated", ref, in: log), 1, "\(read(log))")
    }

    func testAfterTheDaemonStopsTheNextCallResumesTheSignals() throws {
        try bus.startProvider()
        let log = try startMonitor()
        XCTAssertEqual(try harness.run(["stop"]).status, 0)
        // A D-Bus call reaches the daemon again (starting it); the stream is watched again.
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "search", "service", "none"]).stdout, "")
        // A daemon that starts anew starts locked.
        XCTAssertEqual(try harness.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        let service = "resume-\(UUID().uuidString.prefix(8))"
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service, "-a", "a", "-w", "-"], input: "x\n").status, 0)
        let ref = try XCTUnwrap(itemRef(service: service), "\(bus.run(["/usr/bin/secret-tool", "search", "--all", "service", service]))")
        XCTAssertTrue(harness.waitUntil(20) { count("ItemCreated", ref, in: log) == 1 }, "\(read(log))")
    }
}
