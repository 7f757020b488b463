import Foundation
import KeychainTestSupport
import XCTest

/// Items written and removed through a mount are signalled on their collection, as CLI changes
/// are (SecretServiceSignalTests), seen by a real `dbus-monitor`.
final class SecretServiceMountSignalTests: MountTestCase {
    var bus: SessionBus?
    var monitor: CollectionSignalMonitor?

    override func tearDown() {
        monitor?.stop()
        bus?.stop()
        super.tearDown()
    }

    func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    func count(_ member: String, _ ref: String, in log: String) -> Int {
        read(log).components(separatedBy: "member=\(member)\n   object path \"").dropFirst()
            .filter { $0.prefix(while: { $0 != "\"" }).hasSuffix("/" + ref) }.count
    }

    func testAFileWrittenAndRemovedInTheMountIsSignalled() throws {
        try CollectionSignalMonitor.requireTools()
        let mnt = try mount()
        let bus = try SessionBus(harness: h)
        self.bus = bus
        try bus.startProvider()
        let m = try CollectionSignalMonitor(bus: bus)
        monitor = m
        let log = m.log

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
