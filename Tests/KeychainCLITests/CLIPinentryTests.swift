import Foundation
import KeychainTestSupport
import XCTest

/// `unlock-keychain --pinentry` and the vault's pinentry setting: Debian's pinentry-tty typed
/// into in a tmux pane, and scripted pinentries for the failures a user meets.
final class CLIPinentryTests: HarnessTestCase {
    static let pinentryTTY = "/usr/bin/pinentry-tty", tmux = "/usr/bin/tmux"

    /// A scripted pinentry that answers GETPIN with `getpin` (shell lines).
    func fake(_ getpin: String) throws -> String {
        let path = h.dir + "/pinentry-fake"
        try """
            #!/bin/sh
            echo 'OK Pleased to meet you'
            while IFS= read -r line; do
              case "$line" in
                GETPIN) \(getpin) ;;
                BYE) echo OK; exit 0 ;;
                *) echo OK ;;
              esac
            done
            """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    var state: String? { (try? h.info())?["state"] as? String }

    func testPinentryTTYInATmuxPaneUnlocksTheVault() throws {
        for tool in [Self.pinentryTTY, Self.tmux] where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not installed (scripts/setup.sh installs it)")
        }
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(state, "locked")
        let socket = h.dir + "/tmux.sock", done = h.dir + "/done"
        func tmux(_ args: [String]) throws -> CLIHarness.Result {
            let r = try Spawn.run([Self.tmux, "-S", socket] + args, environment: h.environment, input: Data(), timeout: 20)
            return CLIHarness.Result(status: r.status, stdout: String(decoding: r.out, as: UTF8.self), stderr: String(decoding: r.err, as: UTF8.self))
        }
        defer { _ = try? tmux(["kill-server"]) }
        // No terminal on standard input: the pinentry asks on the pane's terminal.
        let command = "'\(CLIHarness.binary)' unlock-keychain --pinentry pinentry-tty '\(h.vault)' </dev/null; echo $? > '\(done)'; sleep 600"
        XCTAssertEqual(try tmux(["new-session", "-d", "-s", "unlock", "-x", "100", "-y", "20", command]).status, 0)
        var screen = ""
        XCTAssertTrue(try h.waitUntil(20) {
            screen = try tmux(["capture-pane", "-p", "-t", "unlock"]).stdout
            return screen.contains("Passphrase:")
        }, "the pinentry's prompt: \(screen)")
        XCTAssertTrue(screen.contains(h.vault), "the description names the vault: \(screen)")
        XCTAssertEqual(try tmux(["send-keys", "-t", "unlock", "-l", "pass phrase 1"]).status, 0)
        XCTAssertEqual(try tmux(["send-keys", "-t", "unlock", "Enter"]).status, 0)
        XCTAssertTrue(h.waitUntil(30) { FileManager.default.fileExists(atPath: done) && ((try? String(contentsOfFile: done, encoding: .utf8)) ?? "").hasSuffix("\n") })
        let pane = try tmux(["capture-pane", "-p", "-t", "unlock"]).stdout
        XCTAssertEqual(try String(contentsOfFile: done, encoding: .utf8), "0\n", pane)
        XCTAssertEqual(state, "unlocked")
        XCTAssertFalse(try tmux(["capture-pane", "-p", "-t", "unlock"]).stdout.contains("pass phrase 1"), "typed without echo")
    }

    func testTheSettingAsksWhenStandardInputGivesNothingAndKeepsScriptsWorking() throws {
        let program = try fake("echo 'D pass%20phrase 1'; echo OK")
        XCTAssertEqual(try h.run(["set-keychain-settings", "--pinentry", program]).status, 0)
        XCTAssertEqual(try h.info()["pinentry"] as? String, program)
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        // Standard input empty (no terminal, no passphrase): the pinentry is asked.
        let r = try h.run(["unlock-keychain"], prefix: ["/usr/bin/setsid", "-w"])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertEqual(state, "unlocked")
        // A passphrase on standard input still counts: a wrong one fails without asking.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "wrong\n", prefix: ["/usr/bin/setsid", "-w"]).status, 51)
        XCTAssertEqual(state, "locked")
        // "" removes the setting.
        XCTAssertEqual(try h.run(["set-keychain-settings", "--pinentry", ""]).status, 0)
        XCTAssertNil(try h.info()["pinentry"])
    }

    func testCancelledPinentryExits128AndTheVaultStaysLocked() throws {
        let program = try fake("echo 'ERR 83886179 Operation cancelled <Pinentry>'")
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let r = try h.run(["unlock-keychain", "--pinentry", program], prefix: ["/usr/bin/setsid", "-w"])
        XCTAssertEqual(r.status, 128, "\(r)")
        XCTAssertTrue(r.stderr.contains("pinentry was cancelled"), r.stderr)
        XCTAssertEqual(state, "locked")
    }

    func testMissingOrBrokenPinentryExits36AndSaysWhy() throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let missing = try h.run(["unlock-keychain", "--pinentry", h.dir + "/no-pinentry"], prefix: ["/usr/bin/setsid", "-w"])
        XCTAssertEqual(missing.status, 36, "\(missing)")
        XCTAssertTrue(missing.stderr.contains("no pinentry program \(h.dir)/no-pinentry"), missing.stderr)
        XCTAssertTrue(missing.stderr.contains("apt-get install pinentry"), missing.stderr)
        let broken = try h.run(["unlock-keychain", "--pinentry", try fake("echo 'hunter2 swordfish'")], prefix: ["/usr/bin/setsid", "-w"])
        XCTAssertEqual(broken.status, 36, "\(broken)")
        XCTAssertTrue(broken.stderr.contains("broke the Assuan protocol"), broken.stderr)
        XCTAssertFalse(broken.stderr.contains("swordfish"), "what it sent is not repeated past its first word")
        XCTAssertEqual(state, "locked")
    }

    func testPinentryWithoutProgramLeavesTheVaultArgumentAlone() throws {
        // `--pinentry VAULT`: an existing file that is no program stays the vault; `pinentry` is
        // run (absent from this PATH).
        let r = try h.run(["unlock-keychain", "--pinentry", h.vault], env: ["PATH": h.dir], prefix: ["/usr/bin/setsid", "-w"])
        XCTAssertEqual(r.status, 36, "\(r)")
        XCTAssertTrue(r.stderr.contains("no pinentry program pinentry "), r.stderr)
        XCTAssertEqual(try h.run(["unlock-keychain", "--pinentry", "-p", "x"]).status, 2, "--pinentry with -p")
    }
}
