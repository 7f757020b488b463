import Foundation
import KeychainTestSupport
import XCTest

/// README.md's "The command line" block, run by bash line for line as a new user would after
/// the install step (the built `keychainfs` and `keychainfs-daemon` first on PATH): a vault
/// made, a secret stored and read, a lock and an unlock, a group, a mount whose file `cat`
/// prints, the audit chain, a TLS key and certificate imported and listed.
///
/// Two changes to the text, both for running beside other tests: `/run/keychain` is a mount
/// point in this test's scratch directory (two runs must not share one), and `sudo` is the
/// command itself when the test runs as root (it always does in CI).
final class ReadmeCommandsTests: XCTestCase {
    private var h: CLIHarness!
    private var mountpoint = ""

    override func setUpWithError() throws {
        guard getuid() == 0 else { throw XCTSkip("the README's block mounts and runs sudo: run as root") }
        guard FileManager.default.fileExists(atPath: "/dev/fuse") else { throw XCTSkip("no /dev/fuse") }
        h = try CLIHarness()
        mountpoint = h.dir + "/run-keychain"
    }

    override func tearDown() {
        if let h {
            _ = try? runProgram(["/usr/bin/fusermount3", "-u", "-z", mountpoint])
            _ = try? h.run(["stop", h.dir + "/home/app.vault"], timeout: 10)
            h.tearDown()
        }
        super.tearDown()
    }

    /// The sh block after the "## The command line" heading.
    private func readmeBlock() throws -> [String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        guard let section = text.range(of: "\n## The command line\n"),
              let open = text.range(of: "```sh\n", range: section.upperBound..<text.endIndex),
              let close = text.range(of: "\n```", range: open.upperBound..<text.endIndex)
        else { throw XCTSkip("README.md has no sh block under \"The command line\"") }
        return text[open.upperBound..<close.lowerBound].split(separator: "\n").map(String.init)
    }

    func testTheCommandLineSectionRunsAsWritten() throws {
        let lines = try readmeBlock()
        XCTAssertTrue(lines.contains { $0.hasPrefix("keychainfs mount /run/keychain") }, "the block mounts: \(lines)")
        let home = h.dir + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        // What `keychainfs import server.pem -x` reads: a key and its certificate in one PEM file.
        try CertificateSupportFiles.serverPEM(into: home + "/server.pem", commonName: "server.example")

        var script = ["set -e", "cd \"$HOME\"", "sudo() { \"$@\"; }", "PS4='+ README: '", "set -x"]
        script += lines.map { $0.replacingOccurrences(of: "/run/keychain", with: mountpoint) }
        var env = h.environment
        env["KEYCHAINFS_VAULT"] = nil  // the block exports its own
        env["HOME"] = home
        env["USER"] = "root"
        env["PATH"] = (CLIHarness.binary as NSString).deletingLastPathComponent + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        let passphrase = "readme pass phrase " + Canary.make(6)
        let r = try Spawn.run(["/bin/bash", "-c", script.joined(separator: "\n")], environment: env,
                              input: Data((passphrase + "\n" + passphrase + "\n").utf8), timeout: 120)
        let out = String(decoding: r.out, as: UTF8.self), err = String(decoding: r.err, as: UTF8.self)
        XCTAssertEqual(r.status, 0, "every line of the block succeeds; the trace ends at the one that failed:\n\(err)")
        XCTAssertTrue(out.hasPrefix("keychainfs "), "--version first: \(out)")
        XCTAssertTrue(out.split(separator: "\n").contains("s3cret"), "find-generic-password -w prints s3cret: \(out)")
        XCTAssertTrue(out.contains("audit log verified"), out)
        XCTAssertNotNil(out.range(of: #"  1\) [0-9A-F]{40} "server.example""#, options: .regularExpression),
                        "find-identity -v lists the imported pair: \(out)")
        XCTAssertTrue(out.contains("1 valid identities found"), out)
        // The comment on the mount line: `cat /run/keychain/db/app`.
        let cat = try runProgram(["/bin/cat", mountpoint + "/db/app"])
        XCTAssertEqual(cat.stdoutText, "s3cret", "\(cat)")
    }
}

/// Test TLS material made by openssl in a given place.
enum CertificateSupportFiles {
    static func serverPEM(into path: String, commonName: String) throws {
        let key = path + ".key", cert = path + ".crt"
        defer { unlink(key); unlink(cert) }
        try TLSMaterial.openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key])
        try TLSMaterial.openssl(["req", "-x509", "-new", "-key", key, "-subj", "/CN=\(commonName)", "-days", "2",
                                 "-out", cert])
        let both = try Data(contentsOf: URL(fileURLWithPath: key)) + Data(contentsOf: URL(fileURLWithPath: cert))
        try both.write(to: URL(fileURLWithPath: path))
    }
}
