import Foundation
import KeychainTestSupport
import XCTest

/// Collection signals for changes made outside D-Bus: the CLI adds, updates and deletes, and a
/// client of the owner listening on the private bus receives ItemCreated, ItemChanged and
/// ItemDeleted.
final class SecretServiceSignalTests: XCTestCase {
    var harness: CLIHarness!
    var bus: SessionBus!
    var listener: SignalListener?

    override func setUpWithError() throws {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/secret-tool", "/usr/bin/dbus-send", "/usr/bin/python3"] where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not installed (scripts/setup.sh installs it)")
        }
        harness = try CLIHarness()
        try harness.createVault()
        bus = try SessionBus(harness: harness)
        guard bus.python("import jeepney").status == 0 else { throw XCTSkip("python3-jeepney is not installed") }
    }

    override func tearDown() {
        listener?.stop()
        bus?.stop()
        harness?.tearDown()
    }

    /// Starts a client of the owner that listens for the service's signals (it has called the
    /// service, so the provider sends it the signals of the groups it may read).
    func startListener() throws -> SignalListener {
        let l = try SignalListener(bus: bus, name: "owner")
        listener = l
        return l
    }

    func read(_ l: SignalListener) -> String { l.text }

    /// How many times `member` was signalled for the item whose path ends in `ref`.
    func count(_ member: String, _ ref: String, in l: SignalListener) -> Int { l.count(member, ref) }

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
        let log = try startListener()
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
        let log = try startListener()
        let service = "once-\(UUID().uuidString.prefix(8))"
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "L", "service", service, "account", "a"], input: "x").status, 0)
        let path = try XCTUnwrap(itemRef(service: service))
        // A CLI change after it: once its signal is out, the feed has seen the D-Bus one too
        // (the daemon's events are in order), so a repeat would be in the log by then.
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service + "-cli", "-a", "b", "-w", "-"], input: "y\n").status, 0)
        let cliPath = try XCTUnwrap(itemRef(service: service + "-cli"))
        XCTAssertTrue(harness.waitUntil(20) { count("ItemCreated", cliPath, in: log) == 1 }, "\(read(log))")
        XCTAssertEqual(count("ItemCreated", path, in: log), 1, "\(read(log))")
        // The collection's Items after the D-Bus create hold the new item.
        let changed = try XCTUnwrap(log.signals.first { $0.hasPrefix("PropertiesChanged /org/freedesktop/secrets/collection/default ") },
                                    read(log))
        XCTAssertTrue(changed.split(separator: " ").contains {
            $0.hasPrefix("Items=") && $0.dropFirst(6).split(separator: ",").contains { $0.hasSuffix("/" + path) }
        }, read(log))
    }

    func testLockingAndUnlockingIsNoDeletionNorCreation() throws {
        try bus.startProvider()
        let log = try startListener()
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
        let log = try startListener()
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

    /// Outside adds in a row, each looked up by the name its event gives: every item is signalled
    /// created exactly once, and nothing else is signalled for them.
    func testManyOutsideAddsAreEachSignalledOnce() throws {
        try bus.startProvider()
        let log = try startListener()
        let service = "many-\(UUID().uuidString.prefix(8))"
        for i in 0..<30 {
            XCTAssertEqual(try harness.run(["add-generic-password", "-s", service, "-a", "a\(i)", "-w", "-"], input: "x\(i)\n").status, 0)
        }
        XCTAssertTrue(harness.waitUntil(30) { log.signals.filter { $0.hasPrefix("ItemCreated ") }.count >= 30 }, read(log))
        XCTAssertTrue(log.sync())
        let created = log.signals.filter { $0.hasPrefix("ItemCreated ") }
        XCTAssertEqual(created.count, 30, read(log))
        XCTAssertEqual(Set(created).count, 30, read(log))
        XCTAssertEqual(log.signals.count, 30, read(log))
    }

    /// One of the provider's counts (`VaultComparisons`, `DaemonRequests` of its own interface).
    func providerCount(_ name: String) -> Int? {
        let r = bus.run(["/usr/bin/dbus-send", "--session", "--print-reply=literal", "--dest=org.freedesktop.secrets",
                         "/org/freedesktop/secrets", "org.freedesktop.DBus.Properties.Get",
                         "string:org.keychainfs.SecretService", "string:" + name])
        return r.stdout.split(separator: " ").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    func vaultComparisons() -> Int? { providerCount("VaultComparisons") }

    /// A `secret-tool lookup` (GetAll of the service, OpenSession, SearchItems, GetSecrets) costs
    /// the provider two requests to the daemon, the search and the read of the secret: the group
    /// table is kept while the daemon's stream brings no change of it.
    func testALookupCostsTheProviderOneDaemonRequestPerCallThatReadsTheVault() throws {
        try bus.startProvider()
        let service = "rt-\(UUID().uuidString.prefix(8))"
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "L", "service", service, "account", "a"], input: "x").status, 0)
        // The first look and the one after the stream started are done: nothing else runs now.
        XCTAssertTrue(harness.waitUntil(20) { vaultComparisons() == 2 }, "\(String(describing: vaultComparisons()))")
        let before = try XCTUnwrap(providerCount("DaemonRequests"))
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", "a"]).stdout, "x")
        XCTAssertEqual(providerCount("DaemonRequests"), before + 2)
        XCTAssertEqual(vaultComparisons(), 2)
    }

    /// A change made over D-Bus by reference (SetSecret) comes back on the daemon's stream named
    /// by its service and account, so the provider looks at that one item: in a collection of
    /// 300 items, 20 SetSecret calls give 20 ItemChanged, one each, and no whole-vault comparison.
    func testSetSecretByReferenceIsLookedUpByNameNotByComparingTheVault() throws {
        try bus.startProvider()
        let log = try startListener()
        let service = "ref-\(UUID().uuidString.prefix(8))"
        let fill = bus.python("""
            import secretstorage
            col = secretstorage.get_default_collection(secretstorage.dbus_init())
            for i in range(300):
                col.create_item("L", {"service": "\(service)", "account": "a%d" % i}, b"x")
            """)
        XCTAssertEqual(fill.status, 0, "\(fill)")
        let before = try XCTUnwrap(vaultComparisons())
        let set = bus.python("""
            import secretstorage
            c = secretstorage.dbus_init()
            item = list(secretstorage.search_items(c, {"service": "\(service)", "account": "a7"}))[0]
            for i in range(20):
                item.set_secret(b"v%d" % i)
            print(item.item_path.split("/")[-1])
            """)
        XCTAssertEqual(set.status, 0, "\(set)")
        let path = set.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // A CLI add after them: once its signal is out, the feed has taken the stream's events
        // of the 20 changes too (the daemon's events are in order).
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service + "-cli", "-a", "b", "-w", "-"], input: "y\n").status, 0)
        let cliPath = try XCTUnwrap(itemRef(service: service + "-cli"))
        XCTAssertTrue(harness.waitUntil(30) { count("ItemCreated", cliPath, in: log) == 1 }, read(log))
        XCTAssertEqual(count("ItemChanged", path, in: log), 20, read(log))
        XCTAssertEqual(log.signals.filter { $0.hasPrefix("ItemChanged ") }.count, 20, read(log))
        XCTAssertEqual(vaultComparisons(), before)
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", "a7"]).stdout, "v19")
    }
}
