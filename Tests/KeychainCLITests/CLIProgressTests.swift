import Foundation
import KeychainTestSupport
import XCTest

/// Progress lines on standard error: on a terminal only, never with --quiet.
final class CLIProgressTests: XCTestCase {
    var h: CLIHarness!

    override func setUpWithError() throws {
        h = try CLIHarness()
        try h.createVault()
    }

    override func tearDown() {
        h?.tearDown()
        h = nil
        super.tearDown()
    }

    /// Locks the vault and leaves a back-off of two failures as of now (a 2 s wait), written
    /// as the daemon writes its count: whole, then renamed into place.
    func lockWithBackOff() throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "wrong\n").status, 51)
        let names = try FileManager.default.contentsOfDirectory(atPath: h.runtimeDir).filter { $0.hasSuffix(".lockout") }
        XCTAssertEqual(names.count, 1, "the back-off count: \(names)")
        let path = h.runtimeDir + "/" + (names.first ?? "x.lockout")
        let now = Int(Date().timeIntervalSince1970 * 1000)
        try Data("\(getuid()) 2 \(now)\n".utf8).write(to: URL(fileURLWithPath: path + ".new"))
        XCTAssertEqual(rename(path + ".new", path), 0)
    }

    /// `keychainfs ARGS` on a pseudo-terminal (`script`); its output, with the terminal's \r removed.
    func onTerminal(_ args: [String]) throws -> (status: Int32, output: String) {
        let command = ([CLIHarness.binary] + args).map { "'" + $0 + "'" }.joined(separator: " ")
        let r = try Spawn.run(["/usr/bin/script", "-qec", command, "/dev/null"], environment: h.environment, input: Data(), timeout: 60)
        return (r.status, String(decoding: r.out, as: UTF8.self).replacingOccurrences(of: "\r", with: ""))
    }

    func testBackOffWaitIsShownOnlyOnATerminal() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { throw XCTSkip("no script(1)") }
        try lockWithBackOff()
        let quietPipe = try h.run(["unlock-keychain"], input: "pass phrase 1\n")
        XCTAssertEqual(quietPipe.status, 0, "\(quietPipe)")
        XCTAssertEqual(quietPipe.stderr, "", "standard error is not a terminal: nothing")

        try lockWithBackOff()
        let shown = try onTerminal(["unlock-keychain", "-p", "pass phrase 1"])
        XCTAssertEqual(shown.status, 0, shown.output)
        XCTAssertNotNil(shown.output.range(of: #"\nkeychainfs: waiting [1-2] s after failed unlock attempts\.\.\.\n"#, options: .regularExpression),
                        shown.output)
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked")

        try lockWithBackOff()
        let quiet = try onTerminal(["unlock-keychain", "--quiet", "-p", "pass phrase 1"])
        XCTAssertEqual(quiet.status, 0, quiet.output)
        XCTAssertEqual(quiet.output, "keychainfs: a passphrase on the command line is visible to other users; prefer standard input\n")
    }

    func testQuietIsAcceptedAndNothingIsPrintedOffATerminal() throws {
        let other = h.dir + "/quiet.vault"
        let create = try h.run(["create-keychain", "--kdf", "interactive", "--quiet", other], input: "quiet pass\n")
        XCTAssertEqual(create.status, 0, "\(create)")
        XCTAssertEqual(create.stdout, "created \(other)\n")
        XCTAssertEqual(create.stderr, "")
        XCTAssertEqual(try h.run(["lock-keychain", other]).status, 0)
        let unlock = try h.run(["unlock-keychain", "--quiet", other], input: "quiet pass\n")
        XCTAssertEqual(unlock.status, 0, "\(unlock)")
        XCTAssertEqual(unlock.stdout + unlock.stderr, "")
        let change = try h.run(["set-keychain-password", "--quiet", other], input: "quiet pass\nnew quiet pass\n")
        XCTAssertEqual(change.status, 0, "\(change)")
        XCTAssertEqual(change.stdout + change.stderr, "")
    }
}
