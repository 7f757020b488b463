import Foundation
import KeychainTestSupport
import XCTest

/// The two executables: `keychainfs`, a client of the daemon, runs `keychainfs-daemon` from its
/// own directory for the verbs that need the engine in-process (docs/cli.md, "The daemon").
final class CLIEngineTests: XCTestCase {
    var h: CLIHarness!

    override func setUpWithError() throws { h = try CLIHarness() }
    override func tearDown() { h.tearDown() }

    func testTheCommandLinksNeitherTheDaemonNorLibfuse() throws {
        let command = try Data(contentsOf: URL(fileURLWithPath: CLIHarness.binary))
        let engine = try Data(contentsOf: URL(fileURLWithPath: CLIHarness.engineBinary))
        let daemonModule = Data("14KeychainDaemon".utf8)  // in every mangled name of the daemon's code
        XCTAssertNil(command.range(of: daemonModule), "keychainfs holds the daemon's code")
        XCTAssertNotNil(engine.range(of: daemonModule))
        XCTAssertFalse(try needed(CLIHarness.binary).contains { $0.hasPrefix("libfuse") })
        XCTAssertTrue(try needed(CLIHarness.engineBinary).contains { $0.hasPrefix("libfuse3") })
    }

    func testTheDaemonIsTheEngineWhateverStartedIt() throws {
        try h.createVault()
        let pid = try XCTUnwrap(try h.daemonPID())
        XCTAssertEqual(CLIHarness.realPath("/proc/\(pid)/exe"), CLIHarness.canonicalEngineBinary)
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        // `keychainfs daemon` in the foreground becomes the engine in place: the same pid.
        let daemon = try BackgroundProcess([CLIHarness.binary, "daemon", h.vault], environment: h.environment,
                                           errorPath: h.dir + "/daemon.err")
        defer { daemon.stop() }
        XCTAssertTrue(h.waitUntil(10) { (try? h.daemonPID()) == daemon.pid }, "the daemon keeps the pid keychainfs had")
        XCTAssertEqual(CLIHarness.realPath("/proc/\(daemon.pid)/exe"), CLIHarness.canonicalEngineBinary)
    }

    func testWithoutTheEngineBesideItItemVerbsWorkAndEngineVerbsExit53() throws {
        try h.createVault()
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "acct", "-w", "s3cret"]).status, 0)
        let alone = h.dir + "/alone"
        try FileManager.default.createDirectory(atPath: alone, withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: CLIHarness.binary, toPath: alone + "/keychainfs")
        func run(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
            let r = try Spawn.run([alone + "/keychainfs"] + args, environment: h.environment, input: Data(), timeout: 30)
            return (r.status, String(decoding: r.out, as: UTF8.self), String(decoding: r.err, as: UTF8.self))
        }
        XCTAssertEqual(try run(["find-generic-password", "-s", "svc", "-w"]).out, "s3cret\n")
        XCTAssertEqual(try run(["help", "mount"]).status, 0)
        for args in [["daemon"], ["create-keychain", h.dir + "/other.vault"], ["mount", h.dir]] {
            let r = try run(args)
            XCTAssertEqual(r.status, 53, "\(args): \(r)")
            XCTAssertEqual(r.err, Sentence.notAvailable + "keychainfs: cannot run \(alone)/keychainfs-daemon: No such file or directory\n")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir + "/other.vault"))
    }

    /// The shared libraries `binary` names (DT_NEEDED), from readelf.
    private func needed(_ binary: String) throws -> [String] {
        let r = try Spawn.run(["/usr/bin/readelf", "-d", binary], environment: [:], input: Data(), timeout: 30)
        XCTAssertEqual(r.status, 0)
        return String(decoding: r.out, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard line.contains("(NEEDED)"), let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
    }
}
