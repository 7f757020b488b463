import Foundation
import KeychainTestSupport
import XCTest

/// Progress lines on standard error: on a terminal only, never with --quiet.
final class CLIProgressTests: HarnessTestCase {
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
        let r = try onTerminalRaw(args)
        return (r.status, r.output.replacingOccurrences(of: "\r", with: ""))
    }

    /// The same with the output as written (the terminal's \r\n made \n, a program's own \r
    /// kept); `input`, when given, is a line piped to standard input, the rest stays on the terminal.
    func onTerminalRaw(_ args: [String], input: String? = nil, timeout: Double = 60) throws -> (status: Int32, output: String) {
        var command = ([CLIHarness.binary] + args).map { "'" + $0 + "'" }.joined(separator: " ")
        if let input { command = "printf '%s\\n' '\(input)' | " + command }
        let r = try Spawn.run(["/usr/bin/script", "-qec", command, "/dev/null"], environment: h.environment, input: Data(), timeout: timeout)
        return (r.status, String(decoding: r.out, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n"))
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

    /// 20 secrets of 1 MiB: a backup of over 16 MiB, so it crosses the socket in several pieces.
    func fillWithBigSecrets() throws {
        for i in 0..<20 {
            let secret = String(repeating: "item \(i) ", count: (1 << 20) / "item \(i) ".utf8.count)
            let r = try h.run(["add-generic-password", "-s", "big", "-a", "item-\(i)", "-w", "-"], input: secret)
            XCTAssertEqual(r.status, 0, "add \(i): \(r)")
        }
    }

    func testBackupTransferIsShownOnlyOnATerminal() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { throw XCTSkip("no script(1)") }
        try fillWithBigSecrets()
        let backup = h.dir + "/big.backup"
        let pass = "backup pass phrase"
        let export = try h.run(["export", "--out", backup], input: pass + "\n", timeout: 300)
        XCTAssertEqual(export.status, 0, "\(export)")
        XCTAssertEqual(export.stdout, "exported 20 items to \(backup)\n")
        XCTAssertEqual(export.stderr, "", "standard error is not a terminal: nothing")
        var st = stat()
        XCTAssertEqual(stat(backup, &st), 0)
        XCTAssertGreaterThan(Int(st.st_size), 20 << 20, "more than one 16 MiB piece")
        let total = (Int(st.st_size) + (1 << 19)) >> 20
        let imported = try h.run(["import", backup], input: pass + "\n", timeout: 300)
        XCTAssertEqual(imported.status, 0, "\(imported)")
        XCTAssertEqual(imported.stdout, "added 0, replaced 0, skipped 20\n")
        XCTAssertEqual(imported.stderr, "", "standard error is not a terminal: nothing")

        // On a terminal: one line rewritten in place (\r), ended by a newline before the summary.
        let shownExport = try onTerminalRaw(["export", "--out", backup], input: pass, timeout: 300)
        XCTAssertEqual(shownExport.status, 0, shownExport.output)
        let exportLine = "\rkeychainfs: export: sealing the items...\rkeychainfs: export: 16 of \(total) MiB"
        XCTAssertTrue(shownExport.output.hasPrefix(exportLine), shownExport.output)
        XCTAssertTrue(shownExport.output.hasSuffix("\rkeychainfs: export: \(total) of \(total) MiB\nexported 20 items to \(backup)\n"),
                      shownExport.output)
        let shownImport = try onTerminalRaw(["import", backup], input: pass, timeout: 300)
        XCTAssertEqual(shownImport.status, 0, shownImport.output)
        XCTAssertTrue(shownImport.output.hasPrefix("\rkeychainfs: import: 0 of \(total) MiB\rkeychainfs: import: 16 of \(total) MiB"),
                      shownImport.output)
        XCTAssertTrue(shownImport.output.contains("\rkeychainfs: import: \(total) of \(total) MiB sent, opening and restoring the items..."),
                      shownImport.output)
        XCTAssertNotNil(shownImport.output.range(of: "\rkeychainfs: import: \(total) of \(total) MiB, 20 items *\nadded 0, replaced 0, skipped 20\n$",
                                                 options: .regularExpression), shownImport.output)
        // A refused import ends the line before it says why.
        let refused = try onTerminalRaw(["import", backup], input: "not the backup pass phrase", timeout: 300)
        XCTAssertEqual(refused.status, 51, refused.output)
        XCTAssertTrue(refused.output.contains("opening and restoring the items...\nkeychainfs: "), refused.output)
        XCTAssertTrue(refused.output.hasSuffix("\nkeychainfs: nothing was imported: the backup passphrase is wrong\n"), refused.output)

        // --quiet on a terminal: only the summaries.
        let quietExport = try onTerminalRaw(["export", "--quiet", "--out", backup], input: pass, timeout: 300)
        XCTAssertEqual(quietExport.status, 0, quietExport.output)
        XCTAssertEqual(quietExport.output, "exported 20 items to \(backup)\n")
        let quietImport = try onTerminalRaw(["import", "--quiet", backup], input: pass, timeout: 300)
        XCTAssertEqual(quietImport.status, 0, quietImport.output)
        XCTAssertEqual(quietImport.output, "added 0, replaced 0, skipped 20\n")
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
