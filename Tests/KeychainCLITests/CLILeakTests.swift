import Foundation
import KeychainTestSupport
import XCTest

/// No secret or passphrase in the daemon's argv, environment, log or runtime files.
final class CLILeakTests: XCTestCase {
    var h: CLIHarness!

    override func setUpWithError() throws {
        h = try CLIHarness()
    }

    override func tearDown() {
        h?.tearDown()
        h = nil
        super.tearDown()
    }

    func testNoSecretInDaemonArgvEnvironmentOrLogs() throws {
        let tag = UUID().uuidString.prefix(8)
        let passphrase = "PASS-canary-\(tag)"
        let newPassphrase = "NEWPASS-canary-\(tag)"
        let wrongPassphrase = "WRONG-canary-\(tag)"
        let secret = "SECRET-canary-\(tag)"
        let secret2 = "SECRET2-canary-\(tag)"
        let canaries = [passphrase, newPassphrase, wrongPassphrase, secret, secret2]

        try h.createVault(passphrase: passphrase)
        var outputs: [CLIHarness.Result] = []
        func ok(_ args: [String], input: String? = nil, status: Int32 = 0) throws {
            let r = try h.run(args, input: input)
            XCTAssertEqual(r.status, status, "\(args): \(r)")
            outputs.append(r)
        }
        try ok(["add-generic-password", "-s", "leak", "-a", "acct", "-w", "-"], input: secret + "\n")
        try ok(["add-internet-password", "-s", "leak.example", "-a", "acct", "-w", "-", "--accessible", "ck"], input: secret2)
        try ok(["add-generic-password", "-s", "leak", "-a", "acct", "-w", "-"], input: secret, status: 45)
        try ok(["add-generic-password", "-s", "leak", "-a", "acct", "-w", "-", "-U"], input: secret)
        let read = try h.run(["find-generic-password", "-s", "leak", "-w"])
        XCTAssertEqual(read.stdout, secret + "\n")
        try ok(["dump-keychain", "-d"])
        try ok(["lock-keychain"])
        try ok(["find-generic-password", "-s", "leak", "-w"], status: 36)
        try ok(["unlock-keychain"], input: wrongPassphrase + "\n", status: 51)
        try ok(["unlock-keychain"], input: passphrase + "\n")
        try ok(["set-keychain-password"], input: "\(passphrase)\n\(newPassphrase)\n")
        try ok(["set-keychain-password"], input: "\(wrongPassphrase)\n\(secret)\n", status: 51)
        try ok(["delete-internet-password", "-s", "leak.example"])

        // Only -w/-g/-d print a secret; no error message or other output carries one.
        for r in outputs {
            let printsSecrets = r.stdout.contains("data:\n")        // dump-keychain -d, on request
            for c in canaries where !(printsSecrets && (c == secret || c == secret2)) {
                XCTAssertFalse(r.stdout.contains(c) || r.stderr.contains(c), "\(c) in CLI output \(r)")
            }
        }

        guard let pid = try h.daemonPID() else { return XCTFail("no daemon") }
        let cmdline = try XCTUnwrap(FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"))
        let argv = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(argv, [CLIHarness.canonicalEngineBinary, "daemon", h.vault], "the daemon's argv is exactly its vault")

        let environ = try XCTUnwrap(FileManager.default.contents(atPath: "/proc/\(pid)/environ"), "root reads the environment")
        let envText = String(decoding: environ, as: UTF8.self)
        XCTAssertTrue(envText.contains("KEYCHAINFS_VAULT=\(h.vault)"), "the environment was really read")

        var runtimeFiles: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: h.runtimeDir) where !name.hasSuffix(".sock") {
            runtimeFiles[name] = String(decoding: FileManager.default.contents(atPath: h.runtimeDir + "/" + name) ?? Data(), as: UTF8.self)
        }
        let log = runtimeFiles.filter { $0.key.hasSuffix(".log") }.values.joined()
        XCTAssertTrue(log.contains("unlock failed for uid=0"), "the log was really read: \(log)")
        XCTAssertTrue(log.contains("passphrase changed by uid=0"), log)

        for c in canaries {
            XCTAssertFalse(String(decoding: cmdline, as: UTF8.self).contains(c), "\(c) in the daemon's argv")
            XCTAssertFalse(envText.contains(c), "\(c) in the daemon's environment")
            for (name, text) in runtimeFiles {
                XCTAssertFalse(text.contains(c), "\(c) in \(name)")
            }
        }
        // The daemon cannot dump core.
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") } ?? ""
        XCTAssertEqual(core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2), ["0", "0"], String(core))
    }
}
