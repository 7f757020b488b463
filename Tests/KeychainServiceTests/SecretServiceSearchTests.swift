import Foundation
import KeychainTestSupport
import XCTest

/// `SearchItems` by attributes finds exactly its items among many through the daemon's blind
/// tokens (docs/secret-service.md, "Searching"): real daemon, provider and clients on a private bus.
final class SecretServiceSearchTests: XCTestCase {
    var harness: CLIHarness!
    var bus: SessionBus!

    override func setUpWithError() throws {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/secret-tool", "/usr/bin/python3"] where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not installed (scripts/setup.sh installs it)")
        }
        harness = try CLIHarness()
        try harness.createVault()
        bus = try SessionBus(harness: harness)
        try bus.startProvider()
    }

    override func tearDown() {
        bus?.stop()
        harness?.tearDown()
    }

    /// Adds `count` items over D-Bus (one secretstorage connection): label `item-N`, attributes
    /// `app` = `tag`, `n` = N, `user` = `u(N % 7)`, `service` only on even N.
    func fill(_ count: Int, tag: String) {
        let r = bus.run(["/usr/bin/python3", "-B", "-c", """
            import secretstorage
            bus = secretstorage.dbus_init()
            col = secretstorage.get_default_collection(bus)
            for n in range(\(count)):
                attrs = {"app": "\(tag)", "n": str(n), "user": "u%d" % (n % 7)}
                if n % 2 == 0: attrs["service"] = "svc-\(tag)"
                col.create_item("item-%d" % n, attrs, ("secret-%d" % n).encode())
            """], timeout: 900)
        XCTAssertEqual(r.status, 0, "fill: \(r)")
    }

    /// The labels `SearchItems` returns for `query`, sorted.
    func labels(_ query: [String: String]) -> [String] {
        let dict = query.map { "\"\($0.key)\": \"\($0.value)\"" }.joined(separator: ", ")
        let r = bus.python("""
            import secretstorage
            bus = secretstorage.dbus_init()
            col = secretstorage.get_default_collection(bus)
            for label in sorted(i.get_label() for i in col.search_items({\(dict)})): print(label)
            """)
        XCTAssertEqual(r.status, 0, "search: \(r)")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    func expected(_ count: Int, _ keep: (Int) -> Bool) -> [String] { (0..<count).filter(keep).map { "item-\($0)" }.sorted() }

    func testSearchByAttributesReturnsExactlyTheMatchingItemsAmongMany() throws {
        fill(300, tag: "mail")
        fill(20, tag: "other")
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", "svc-mail", "-a", "from-cli", "-w", "-"],
                                       input: "cli\n").status, 0)
        XCTAssertEqual(labels(["app": "mail", "user": "u3"]), expected(300) { $0 % 7 == 3 })
        XCTAssertEqual(labels(["app": "mail", "n": "123"]), ["item-123"])
        XCTAssertEqual(labels(["app": "other", "n": "123"]), [])
        XCTAssertEqual(labels(["n": "7", "user": "u0"]).count, 2, "item-7 of both tags")
        XCTAssertEqual(labels(["service": "svc-mail", "user": "u1"]), expected(300) { $0 % 2 == 0 && $0 % 7 == 1 })
        // An item made by the CLI is found by its service and account.
        XCTAssertEqual(labels(["service": "svc-mail", "account": "from-cli"]).count, 1)
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "app", "mail", "n", "42"]).stdout, "secret-42")

        // Changed attributes and a deleted item: the old pairs find nothing, the new ones find it.
        let change = bus.python("""
            import secretstorage
            bus = secretstorage.dbus_init()
            col = secretstorage.get_default_collection(bus)
            [moved] = list(col.search_items({"app": "mail", "n": "5"}))
            moved.set_attributes({"app": "moved", "n": "5"})
            [gone] = list(col.search_items({"app": "mail", "n": "6"}))
            gone.delete()
            """)
        XCTAssertEqual(change.status, 0, "change: \(change)")
        XCTAssertEqual(labels(["app": "mail", "n": "5"]), [])
        XCTAssertEqual(labels(["app": "moved"]), ["item-5"])
        XCTAssertEqual(labels(["app": "mail", "n": "6"]), [])
        XCTAssertEqual(labels(["app": "mail", "user": "u5"]), expected(300) { $0 % 7 == 5 && $0 != 5 })
        XCTAssertEqual(labels(["app": "mail", "user": "u6"]), expected(300) { $0 % 7 == 6 && $0 != 6 })
    }

    /// Prints `secret-tool lookup`'s time per invocation (median of 15) at 200 and 2,000 items,
    /// by attributes without `service` and with it. Not asserted: a measurement
    /// (`KEYCHAINFS_BIN` runs it against another build).
    func testLookupTimePerInvocationAt200And2000Items() throws {
        guard ProcessInfo.processInfo.environment["KEYCHAINFS_MEASURE"] != nil else {
            throw XCTSkip("measures only when KEYCHAINFS_MEASURE is set")
        }
        var filled = 0
        for total in [200, 2000] {
            fill(total - filled, tag: "t\(total)")
            filled = total
            let listed = bus.python("""
                import secretstorage
                print(len(list(secretstorage.get_default_collection(secretstorage.dbus_init()).get_all_items())))
                """)
            print("items in the vault: \(listed.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
            for (name, argv) in [("without service", ["app", "t\(total)", "n", "17"]),
                                 ("with service", ["service", "svc-t\(total)", "n", "16"])] {
                var times: [Double] = []
                for _ in 0..<15 {
                    let r = bus.run(["/usr/bin/secret-tool", "lookup"] + argv)
                    XCTAssertEqual(r.status, 0, "\(r)")
                    times.append(r.elapsed)
                }
                let median = times.sorted()[times.count / 2]
                print(String(format: "secret-tool lookup, %d items, %@: %.1f ms", total, name, median * 1000))
            }
        }
    }
}
