import Foundation
import KeychainTestSupport
import XCTest

/// Descriptors passed over D-Bus (PRODUCT 11 and 14): on a bus shared by several users, an
/// outsider mounts a FUSE file system whose FLUSH never answers anyone else (hangfs), opens its
/// file and calls the provider's OpenSession with the descriptor attached (signature `svh`).
/// Had the provider taken it, sd-bus would close it on the provider's only thread when the
/// message was freed, and that close would wait in the kernel for good. No Secret Service method
/// takes a descriptor, so the provider does not negotiate them and the bus refuses the call.
///
/// The file systems spare the bus daemon: it receives the descriptor and closes its copy
/// whatever the provider does, and an attacker aiming at the provider leaves the bus running
/// (one that holds the bus daemon's FLUSH stops the whole bus, outside keychainfs).
final class SecretServiceDescriptorTests: XCTestCase {
    var harness: CLIHarness!
    var bus: SessionBus!
    let accounts = TestAccounts()
    private var fileSystems: [HangingFileSystem] = []
    private var attackers: [BackgroundProcess] = []

    override func setUpWithError() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root: test users, setpriv and the provider's /proc entries") }
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/secret-tool", "/usr/bin/setpriv", "/usr/bin/python3"] where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not installed")
        }
        guard access("/dev/fuse", R_OK | W_OK) == 0, access("/usr/bin/fusermount3", X_OK) == 0 else {
            throw XCTSkip("no /dev/fuse or fusermount3: the attackers mount their own file systems")
        }
        harness = try CLIHarness()
        try harness.createVault()
        guard succeeds(["/usr/bin/python3", "-c", "import jeepney"]) else { throw XCTSkip("python3-jeepney is not installed") }
        bus = try SessionBus(harness: harness, otherUsers: true)
        try bus.startProvider()
    }

    private func succeeds(_ argv: [String]) -> Bool {
        (try? Spawn.run(argv, environment: ["PATH": "/usr/bin:/bin"], input: Data(), timeout: 30).status) == 0
    }

    override func tearDown() {
        // The attackers, then their file systems (their end frees whatever waits on them), then
        // the provider and the bus, the vault's daemon, the users.
        for a in attackers { a.tell("close") }
        for a in attackers { a.stop() }
        attackers = []
        for fs in fileSystems { fs.stop() }
        fileSystems = []
        bus?.stop()
        harness?.tearDown()
        accounts.remove()
        super.tearDown()
    }

    func testOutsidersDescriptorsNeverReachTheProvider() throws {
        let service = "fd-" + UUID().uuidString.prefix(8)
        let add = try harness.run(["add-generic-password", "-s", service, "-a", "owner", "-w", "-"], input: "owner only\n")
        XCTAssertEqual(add.status, 0, "\(add)")
        guard let provider = bus.providerPID else { return XCTFail("no provider") }

        // Four outsiders at once, each with its own hanging file system, each passing its file.
        for i in 0..<4 {
            let user = try accounts.makeUser()
            let fs = try HangingFileSystem(as: user, in: harness.dir, name: "hang\(i)", sparing: [bus.pid])
            fileSystems.append(fs)
            attackers.append(try Attackers.start("dbus_pass_fd.py", [bus.address, fs.file], as: user, scratch: harness.dir))
        }
        for (i, attacker) in attackers.enumerated() {
            _ = try attacker.expect("connected", within: 20)
            // The bus answers the sender itself: the provider does not take descriptors.
            let answer = try attacker.expect(["error", "reply", "timeout"], within: 20)
            XCTAssertEqual(answer, ["error", "org.freedesktop.DBus.Error.NotSupported"], "attacker \(i)")
        }
        for (i, fs) in fileSystems.enumerated() {
            XCTAssertNil(fs.heldRequest(within: i == 0 ? 1 : 0.1), "hangfs \(i) holds a close by pid \(provider) (the provider)")
        }

        // The owner is served at once.
        let lookup = bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", "owner"], timeout: 5)
        XCTAssertEqual(lookup.status, 0, "the owner's secret-tool lookup: \(lookup)")
        XCTAssertEqual(lookup.stdout, "owner only")
        XCTAssertLessThan(lookup.elapsed, 5, "the owner's secret-tool lookup took \(lookup.elapsed) s")
        let waits = threadWaits(of: provider)
        XCTAssertFalse(waits.isEmpty, "control: the provider's threads are readable in /proc")
        XCTAssertEqual(waits.filter { $0.wchan.contains("request_wait_answer") }.map(\.thread), [],
                       "provider threads waiting on a FUSE answer: \(waits)")

        // SIGTERM ends it while the attackers still hold their file systems.
        XCTAssertEqual(bus.terminateProvider(within: 10), 128 + SIGTERM, "the provider did not end on SIGTERM: \(threadWaits(of: provider))")
    }
}
