import Foundation
import KeychainTestSupport
import XCTest

/// Items written and removed through a mount are signalled on their collection, as CLI changes
/// are (SecretServiceSignalTests), received by a client of the owner listening on the bus.
final class SecretServiceMountSignalTests: MountTestCase {
    var bus: SessionBus?
    var listener: SignalListener?

    override func tearDown() {
        listener?.stop()
        bus?.stop()
        super.tearDown()
    }

    func read(_ l: SignalListener) -> String { l.text }

    func count(_ member: String, _ ref: String, in l: SignalListener) -> Int { l.count(member, ref) }

    func testAFileWrittenAndRemovedInTheMountIsSignalled() throws {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/python3", "/usr/bin/secret-tool", "/usr/bin/dbus-send"] where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not installed (scripts/setup.sh installs it)")
        }
        let mnt = try mount()
        let bus = try SessionBus(harness: h)
        self.bus = bus
        try bus.startProvider()
        guard bus.python("import jeepney").status == 0 else { throw XCTSkip("python3-jeepney is not installed") }
        let log = try SignalListener(bus: bus, name: "owner")
        listener = log

        let service = "mnt-\(UUID().uuidString.prefix(8))"
        XCTAssertEqual(mkdir(mnt + "/" + service, 0o700), 0, "mkdir: \(FS.name(errno))")
        assertErrno(FS.write(mnt + "/\(service)/alice", "from the mount"), 0, "write")
        let search = bus.run(["/usr/bin/secret-tool", "search", "--all", "service", service])
        let text = search.stdout + search.stderr
        let open = try XCTUnwrap(text.range(of: "[/"), "secret-tool finds the mount's item: \(search)")
        let ref = String(text[open.upperBound...].prefix(while: { $0 != "]" }))
        XCTAssertTrue(text.contains("secret = from the mount"), text)
        XCTAssertTrue(h.waitUntil(20) { count("ItemCreated", ref, in: log) == 1 }, "ItemCreated: \(read(log))")

        assertErrno(FS.write(mnt + "/\(service)/alice", "changed"), 0, "rewrite")
        XCTAssertTrue(h.waitUntil(20) { count("ItemChanged", ref, in: log) >= 1 }, "ItemChanged: \(read(log))")

        XCTAssertEqual(unlink(mnt + "/\(service)/alice"), 0, "rm: \(FS.name(errno))")
        XCTAssertTrue(h.waitUntil(20) { count("ItemDeleted", ref, in: log) == 1 }, "ItemDeleted: \(read(log))")
    }
}
