import Foundation
import KeychainTestSupport
import XCTest

/// Presence-gated items (access control): the daemon asks the approval program, and the answer
/// decides the read, as PRODUCT 2 and issue 3 describe.
final class CLIApprovalTests: XCTestCase {
    var h: CLIHarness!
    var approval: ScriptedApprovalProgram!
    var program: String { approval.path }
    var calls: String { approval.calls }

    override func setUpWithError() throws {
        h = try CLIHarness()
        try h.createVault()
        approval = try ScriptedApprovalProgram(in: h.dir)
        let add = try h.run(["add-generic-password", "-s", "gated", "-a", "app", "-l", "Gated label", "-w", "-",
                             "--access-control", "userPresence"], input: "gated-secret")
        XCTAssertEqual(add.status, 0, "\(add)")
    }

    override func tearDown() {
        h?.tearDown()
        h = nil
        super.tearDown()
    }

    func say(_ text: String) throws { try approval.say(text) }

    func testWithoutAProgramTheSecretIsNotAllowed() throws {
        let r = try h.run(["find-generic-password", "-s", "gated", "-w"])
        XCTAssertEqual(r.status, 36, "\(r)")
        XCTAssertEqual(r.stderr, "keychainfs: User interaction is not allowed.\n")
        // Attributes are not gated.
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "gated"]).status, 0)
    }

    func testApprovedDeniedAndTimedOut() throws {
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", program, "--approval-timeout", "1"]).status, 0)
        try say("yes")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "gated", "-w"]).stdout, "gated-secret\n")
        let args = try String(contentsOfFile: calls, encoding: .utf8)
        XCTAssertTrue(args.hasPrefix("--reason presence --label Gated label --uid 0 --pid "), args)
        XCTAssertFalse(args.contains("gated-secret"))
        try say("no")
        let denied = try h.run(["find-generic-password", "-s", "gated", "-w"])
        XCTAssertEqual(denied.status, 128, "errSecUserCanceled: \(denied)")
        XCTAssertEqual(denied.stdout, "")
        try say("hang")
        let slow = try h.run(["find-generic-password", "-s", "gated", "-w"])
        XCTAssertEqual(slow.status, 51, "errSecAuthFailed on timeout: \(slow)")
        XCTAssertLessThan(slow.elapsed, 10)
        // The denial is audited.
        let audit = try h.run(["audit"]).stdout
        XCTAssertTrue(audit.contains("\tpresence-denied\t"), audit)
        XCTAssertTrue(audit.contains("\tpresence-approved\t"), audit)
    }

    func testDevicePasscodeAsksForTheVaultPassphrase() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "pin", "-a", "app", "-w", "-",
                                  "--access-control", "devicePasscode"], input: "pin-secret").status, 0)
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", program]).status, 0)
        try say("passphrase")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "pin", "-w"]).stdout, "pin-secret\n")
        XCTAssertTrue(try String(contentsOfFile: calls, encoding: .utf8).hasPrefix("--reason passphrase "))
        try say("wrong-passphrase")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "pin", "-w"]).status, 51)
    }

    func testRememberedApprovalAsksOnce() throws {
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", program, "--approval-remember", "60"]).status, 0)
        try say("yes")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "gated", "-w"]).status, 0)
        try say("no")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "gated", "-w"]).stdout, "gated-secret\n",
                       "the same executable and item within 60 s")
        let asked = try String(contentsOfFile: calls, encoding: .utf8).split(separator: "\n").count
        XCTAssertEqual(asked, 1)
    }

    /// Opening a gated item's file asks the same program; a refusal is EACCES.
    func testMountedGatedFileAsksTheProgram() throws {
        let mnt = h.dir + "/mnt"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        XCTAssertEqual(try h.run(["mount", mnt]).status, 0)
        defer {
            _ = try? h.run(["unmount", mnt])
            umount2(mnt, Int32(MNT_DETACH))
        }
        func read() -> (Int32, String?) {
            let fd = open(mnt + "/gated/app", O_RDONLY)
            guard fd >= 0 else { return (errno, nil) }
            defer { close(fd) }
            var buf = [UInt8](repeating: 0, count: 64)
            let n = Glibc.read(fd, &buf, 64)
            return n < 0 ? (errno, nil) : (0, String(decoding: buf[0..<n], as: UTF8.self))
        }
        XCTAssertEqual(read().0, EACCES, "no program configured")
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", program]).status, 0)
        try say("no")
        XCTAssertEqual(read().0, EACCES, "denied")
        try say("yes")
        XCTAssertEqual(read().1, "gated-secret")
    }
}
