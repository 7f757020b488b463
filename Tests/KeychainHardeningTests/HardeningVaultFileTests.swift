import Foundation
import KeychainTestSupport
import SQLiteStore
import XCTest

/// Issue 7: vault files that are truncated, have a corrupted header, come from a newer format
/// version, or are not SQLite at all: a clear error and a distinct exit status (docs/cli.md:
/// 49 errSecInvalidKeychain, 50 errSecNoSuchKeychain), never a crash, never a write.
final class HardeningVaultFileTests: HarnessTestCase {
    // Each test makes its own vault files; other processes reach the daemon root starts.
    override class var createsVault: Bool { false }
    override class var sharesRuntimeDirectory: Bool { true }

    struct Outcome: @unchecked Sendable {
        var name: String
        var path: String
        var info: CLIHarness.Result?
        var daemon: CLIHarness.Result?
        var changed = false
        var extraFiles: [String] = []
    }

    final class Outcomes: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var all: [Outcome] = []
        func add(_ o: Outcome) { lock.lock(); all.append(o); lock.unlock() }
    }

    /// A good vault with a few pages of items, its WAL folded in, as one self-contained file.
    private func goodVaultBytes() throws -> [UInt8] {
        try h.createVault(passphrase: "damaged files")
        for i in 0..<12 {
            let r = try h.run(["add-generic-password", "-s", "files", "-a", "a\(i)", "-w", "-"], input: Canary.text(3000))
            XCTAssertEqual(r.status, 0)
        }
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertTrue(h.waitUntil(5) { h.daemons().isEmpty })
        do {
            let c = try Connection(path: h.vault, create: false)
            try c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        for suffix in ["-wal", "-shm"] { unlink(h.vault + suffix) }
        return Array(try Data(contentsOf: URL(fileURLWithPath: h.vault)))
    }

    private func offset(of needle: [UInt8], in bytes: [UInt8]) -> [Int] {
        guard bytes.count >= needle.count else { return [] }
        return (0...(bytes.count - needle.count)).filter { i in bytes[i] == needle[0] && Array(bytes[i..<(i + needle.count)]) == needle }
    }

    func testDamagedVaultFilesGiveAClearErrorAndAreNeverWritten() throws {
        signal(SIGPIPE, SIG_IGN)
        let good = try goodVaultBytes()
        XCTAssertGreaterThan(good.count, 8 * 4096, "several pages")
        let magic = Array("KCFSVLT".utf8) + [0]
        let headers = offset(of: magic, in: good)
        XCTAssertEqual(headers.count, 1, "one vault header in the checkpointed file")
        let header = headers.first ?? 0

        var variants: [(String, [UInt8]?)] = []
        variants.append(("control-good", good))
        variants.append(("truncated-to-half", Array(good.prefix(good.count / 2))))
        variants.append(("truncated-to-first-page", Array(good.prefix(4096))))
        variants.append(("truncated-in-sqlite-header", Array(good.prefix(50))))
        variants.append(("empty-file", []))
        var b = good; b[0] ^= 0xFF
        variants.append(("sqlite-magic-byte", b))
        b = good; b[header] ^= 0x20
        variants.append(("vault-magic-byte", b))
        b = good; b[header + 8] = 0; b[header + 9] = 2
        variants.append(("newer-format-2", b))
        b = good; b[header + 9] = 0xFF
        variants.append(("newer-format-255", b))
        b = good; b[header + 10] = 0x80
        variants.append(("unknown-header-flag", b))
        b = good; b[header + 12] = 0x02
        variants.append(("unknown-kdf", b))
        variants.append(("random-bytes", Canary.bytes(20_000)))
        variants.append(("text", Array("this is not a keychain vault\n".utf8)))
        variants.append(("missing", nil))

        // An SQLite database that is not a vault.
        let foreign = h.dir + "/foreign.sqlite"
        do {
            let c = try Connection(path: foreign, create: true)
            try c.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES('hello');")
        }
        variants.append(("foreign-sqlite", Array(try Data(contentsOf: URL(fileURLWithPath: foreign)))))

        try check(variants)
    }

    /// A cut inside the last page: SQLite reads the missing tail as zeros, so only a size check
    /// (file size against the page count in the SQLite header) can notice it at open.
    func testVaultTruncatedInsideItsLastPageIsRefused() throws {
        signal(SIGPIPE, SIG_IGN)
        let good = try goodVaultBytes()
        try check([("control-good", good), ("truncated-mid-page", Array(good.prefix(good.count - 1500))),
                   ("truncated-by-one-byte", Array(good.prefix(good.count - 1)))])
    }

    /// A caller that ignores SIGCHLD (as a program may inherit from its parent) has its children
    /// reaped unseen: no wait status. The daemon's start report still tells it why the daemon
    /// did not start (49 at once, not 53 after waiting for a socket), and a good vault starts.
    func testACallerThatIgnoresSIGCHLDIsToldWhyTheDaemonDidNotStart() throws {
        let ignoring = ["/usr/bin/python3", "-c",
                        "import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"]
        guard FileManager.default.isExecutableFile(atPath: ignoring[0]) else { throw XCTSkip("no \(ignoring[0])") }
        let damaged = h.dir + "/text.vault"
        XCTAssertTrue(FileManager.default.createFile(atPath: damaged, contents: Data("not a vault\n".utf8),
                                                     attributes: [.posixPermissions: 0o600]))
        let refused = try h.run(["show-keychain-info", damaged], prefix: ignoring, timeout: 30)
        XCTAssertEqual(refused.status, 49, "errSecInvalidKeychain, not 53: \(refused)")
        XCTAssertEqual(refused.stderr, "keychainfs: The specified keychain is not a valid keychain file.\n"
                       + "keychainfs: its daemon did not start: cannot open vault: "
                       + "The file is not a keychainfs vault (not an SQLite database, or damaged).\n")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: damaged)), Data("not a vault\n".utf8))

        let good = h.dir + "/good.vault"
        try h.createVault(path: good)
        addTeardownBlock { [h] in _ = try? h?.run(["stop", good], timeout: 10) }
        XCTAssertEqual(try h.run(["stop", good]).status, 0)
        XCTAssertTrue(h.waitUntil(5) { h.daemons().isEmpty })
        let started = try h.run(["show-keychain-info", good], prefix: ignoring, timeout: 30)
        XCTAssertEqual(started.status, 0, "control: the daemon starts for a good vault: \(started)")
        XCTAssertTrue(started.stdout.hasPrefix("Keychain \"\(good)\""), started.stdout)
    }

    /// Runs show-keychain-info (and `keychainfs daemon`) on each variant, in parallel, and
    /// asserts what issue 7 asks: the CLI reports the daemon's refusal (49) at once, not a
    /// daemon it waited for (53), and nothing is made beside the file.
    private func check(_ variants: [(String, [UInt8]?)]) throws {
        let outcomes = Outcomes()
        let harness = Unchecked(h!)
        let dir = h.dir
        let cases = variants
        let start = Date()
        // In parallel: each variant starts a daemon of its own, which refuses the file.
        concurrently(variants.count) { i in
            let (name, bytes) = cases[i]
            let path = dir + "/\(name).vault"
            if let bytes { XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])) }
            var o = Outcome(name: name, path: path)
            let beforeFiles = Set((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            o.info = try? harness.value.run(["show-keychain-info", path], timeout: 30)
            let accepted = o.info?.status == 0
            if accepted { _ = try? harness.value.run(["stop", path], timeout: 10) }
            if name != "control-good" && name != "missing" && !accepted {
                // The daemon itself, in the foreground: it must refuse the file at once.
                o.daemon = try? harness.value.run(["daemon", path], timeout: 6)
            }
            let after = (try? Data(contentsOf: URL(fileURLWithPath: path))).map(Array.init)
            o.changed = after != bytes
            let afterFiles = Set((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            o.extraFiles = afterFiles.subtracting(beforeFiles).filter { $0.hasPrefix(name + ".vault") }.sorted()
            outcomes.add(o)
        }
        print("damaged vault files checked in \(String(format: "%.1f", Date().timeIntervalSince(start))) s")

        for o in outcomes.all.sorted(by: { $0.name < $1.name }) {
            guard let info = o.info else { XCTFail("\(o.name): show-keychain-info did not run"); continue }
            print("  \(o.name): show-keychain-info exit \(info.status) in \(String(format: "%.2f", info.elapsed)) s, stderr \(info.stderr.debugDescription)"
                  + (o.daemon.map { "; daemon exit \($0.status), stderr \($0.stderr.debugDescription)" } ?? "")
                  + (o.changed ? "; FILE CHANGED" : "") + (o.extraFiles.isEmpty ? "" : "; new files \(o.extraFiles)"))
            if o.name == "control-good" {
                XCTAssertEqual(info.status, 0, "control: the good vault opens: \(info)")
                continue
            }
            XCTAssertFalse(o.changed, "\(o.name): the file was changed")
            XCTAssertTrue(o.extraFiles.isEmpty, "\(o.name): files created beside the vault: \(o.extraFiles)")
            XCTAssertLessThan(info.status, 128, "\(o.name): not a crash (signal): \(info)")
            XCTAssertTrue(info.stdout.isEmpty, "\(o.name): nothing on stdout: \(info.stdout)")
            XCTAssertTrue(info.stderr.hasPrefix("keychainfs: "), "\(o.name): one clear error: \(info.stderr)")
            if o.name == "missing" {
                XCTAssertEqual(info.status, 50, "missing file: errSecNoSuchKeychain: \(info)")
                continue
            }
            if let d = o.daemon {
                XCTAssertEqual(d.status, 49, "\(o.name): `keychainfs daemon` refuses the file with errSecInvalidKeychain: \(d)")
                XCTAssertTrue(d.stderr.contains("cannot open vault"), "\(o.name): the daemon says why: \(d.stderr)")
            }
            XCTAssertEqual(info.status, 49, "\(o.name): errSecInvalidKeychain, the daemon's refusal, not 53 after waiting for it: \(info)")
            XCTAssertTrue(info.stderr.contains("its daemon did not start: cannot open vault: "), "\(o.name): the daemon's reason: \(info.stderr)")
        }
    }
}
