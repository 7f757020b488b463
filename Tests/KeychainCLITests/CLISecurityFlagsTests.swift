import Foundation
import KeychainTestSupport
import XCTest

/// macOS `security` flags and verbs that keychainfs takes as well (docs/cli.md, "macOS
/// security verbs"): the exact output and exit status of each.
final class CLISecurityFlagsTests: HarnessTestCase {
    /// Runs without a controlling terminal, whatever the test runner has.
    let noTerminal = ["/usr/bin/setsid", "-w"]

    func testHexPasswordIsDecoded() throws {
        let add = try h.run(["add-generic-password", "-s", "hex", "-a", "text", "-X", "68656C6c6f"])
        XCTAssertEqual(add.status, 0, "\(add)")
        XCTAssertEqual(add.stderr, Sentence.secretInArgv, "-X is on the command line too")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "hex", "-a", "text", "-w"]).stdout, "hello\n")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "hex", "-a", "bytes", "-X", "00ff0a"]).status, 0)
        let g = try h.run(["find-generic-password", "-s", "hex", "-a", "bytes", "-g"])
        XCTAssertEqual(g.status, 0, "\(g)")
        XCTAssertEqual(g.stderr, "password: 0x00ff0a\n")
        XCTAssertEqual(try h.run(["add-internet-password", "-s", "h.example", "-a", "u", "-X", "736563726574"]).status, 0)
        XCTAssertEqual(try h.run(["find-internet-password", "-s", "h.example", "-w"]).stdout, "secret\n")
        // -p is security's legacy -w for generic passwords (a path for internet ones).
        let legacy = try h.run(["add-generic-password", "-s", "hex", "-a", "legacy", "-p", "old style"])
        XCTAssertEqual(legacy.status, 0, "\(legacy)")
        XCTAssertEqual(legacy.stderr, Sentence.secretInArgv)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "hex", "-a", "legacy", "-w"]).stdout, "old style\n")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "hex", "-a", "twice", "-p", "a", "-w", "b"]).status, 2)
        // -U with -X replaces the secret.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "hex", "-a", "text", "-U", "-X", "6e6577"]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "hex", "-a", "text", "-w"]).stdout, "new\n")
    }

    func testBadHexExits2AndStoresNothing() throws {
        for bad in ["6g", "abc", "0x41", "41 42"] {
            let r = try h.run(["add-generic-password", "-s", "hex", "-a", "bad", "-X", bad])
            XCTAssertEqual(r.status, 2, "\(bad): \(r)")
            XCTAssertTrue(r.stderr.hasPrefix("keychainfs: -X takes an even number of hexadecimal digits (0-9, a-f, A-F)\nusage: keychainfs add-generic-password"), r.stderr)
        }
        let both = try h.run(["add-generic-password", "-s", "hex", "-a", "bad", "-X", "41", "-w", "A"])
        XCTAssertEqual(both.status, 2, "\(both)")
        XCTAssertTrue(both.stderr.hasPrefix("keychainfs: give the secret once: -w, --secret-file or -X\n"), both.stderr)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "hex"]).status, 44)
        // The help says, as security's does, that a secret on the command line is insecure.
        let help = try h.run(["help", "add-generic-password"]).stdout
        XCTAssertTrue(help.contains("Use of -w PASSWORD, -p or -X is insecure"), help)
    }

    func testLabelDefaultsToTheServiceOrServer() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "one", "-w", "-"], input: "x").status, 0)
        XCTAssertTrue(try h.run(["find-generic-password", "-s", "svc", "-a", "one"]).stdout.contains("    \"labl\"<blob>=\"svc\"\n"))
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "two", "-l", "mine", "-w", "-"], input: "x").status, 0)
        XCTAssertTrue(try h.run(["find-generic-password", "-s", "svc", "-a", "two"]).stdout.contains("    \"labl\"<blob>=\"mine\"\n"))
        // An update without -l keeps the label it has.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "two", "-U", "-w", "-"], input: "y").status, 0)
        XCTAssertTrue(try h.run(["find-generic-password", "-s", "svc", "-a", "two"]).stdout.contains("    \"labl\"<blob>=\"mine\"\n"))
        XCTAssertEqual(try h.run(["add-internet-password", "-s", "srv.example", "-a", "u", "-p", "/repo", "-w", "-"], input: "x").status, 0)
        let inet = try h.run(["find-internet-password", "-s", "srv.example", "-p", "/repo"]).stdout
        XCTAssertTrue(inet.contains("    \"labl\"<blob>=\"srv.example\"\n"), inet)
        XCTAssertTrue(inet.contains("    \"path\"<blob>=\"/repo\"\n"), inet)
        // No service: no label (security has nothing to take it from).
        XCTAssertEqual(try h.run(["add-generic-password", "-a", "lonely", "-w", "-"], input: "x").status, 0)
        XCTAssertFalse(try h.run(["find-generic-password", "-a", "lonely"]).stdout.contains("\"labl\""))
    }

    func testErrorPrintsApplesMessage() throws {
        let r = try h.run(["error", "-25300", "0xFFFF9D33", "0", "-25308"])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertEqual(r.stdout, """
            Error: 0xFFFF9D2C -25300 The specified item could not be found in the keychain.
            Error: 0xFFFF9D33 -25293 The user name or passphrase you entered is not correct.
            Error: 0x00000000 0 No error.
            Error: 0xFFFF9D24 -25308 User interaction is not allowed.

            """)
        XCTAssertEqual(r.stderr, "")
        // Codes without a sentence as security's cssmErrorString prints them; errno codes as UNIX[...].
        let unknown = try h.run(["error", "12345", "-1", "100002"])
        XCTAssertEqual(unknown.status, 0, "\(unknown)")
        XCTAssertEqual(unknown.stdout, """
            Error: 0x00003039 12345 unknown error 12345=3039
            Error: 0xFFFFFFFF -1 unknown error -1=ffffffffffffffff
            Error: 0x000186A2 100002 UNIX[No such file or directory]

            """)
        for bad in [["error"], ["error", "abc"], ["error", "0xZZ"], ["error", "99999999999"]] {
            let u = try h.run(bad)
            XCTAssertEqual(u.status, 2, "\(bad): \(u)")
            XCTAssertEqual(u.stdout, "")
        }
    }

    func testKeychainListVerbsPrintTheDefaultVault() throws {
        for verb in ["list-keychains", "default-keychain", "login-keychain"] {
            let r = try h.run([verb])
            XCTAssertEqual(r.status, 0, "\(verb): \(r)")
            XCTAssertEqual(r.stdout, "    \"\(h.vault)\"\n", verb)
            XCTAssertEqual(try h.run([verb, "-d", "user"]).stdout, "    \"\(h.vault)\"\n", verb)
            let set = try h.run([verb, "-s", h.vault])
            XCTAssertEqual(set.status, 2, "\(verb) -s: \(set)")
            XCTAssertTrue(set.stderr.hasPrefix("keychainfs: \(verb) -s is not supported: set KEYCHAINFS_VAULT"), set.stderr)
            XCTAssertEqual(try h.run([verb, "-d", "galaxy"]).status, 2)
        }
        let other = h.dir + "/other.vault"
        XCTAssertEqual(try h.run(["default-keychain"], env: ["KEYCHAINFS_VAULT": other]).stdout, "    \"\(other)\"\n")
    }

    func testLockAllLocksEveryRunningVault() throws {
        let second = h.dir + "/second.vault"
        try h.createVault(passphrase: "second pass", path: second)
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked")
        XCTAssertEqual(try h.info([second])["state"] as? String, "unlocked")
        let r = try h.run(["lock-keychain", "-a"])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertEqual(r.stdout + r.stderr, "")
        XCTAssertEqual(try h.info()["state"] as? String, "locked")
        XCTAssertEqual(try h.info([second])["state"] as? String, "locked")
        let named = try h.run(["lock-keychain", "-a", second])
        XCTAssertEqual(named.status, 2, "\(named)")
        // With no daemon running there is nothing to lock: still 0, and none is started.
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertEqual(try h.run(["stop", second]).status, 0)
        XCTAssertEqual(try h.run(["lock-keychain", "-a"]).status, 0)
        XCTAssertNil(try h.daemonPID())
    }

    func testUnlockDashUAsksOnlyTheTerminal() throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        // The right passphrase on standard input is not taken: -u asks the terminal, and there is none.
        let r = try h.run(["unlock-keychain", "-u"], input: "pass phrase 1\n", prefix: noTerminal)
        XCTAssertEqual(r.status, 36, "\(r)")
        XCTAssertEqual(r.stderr, Sentence.interactionNotAllowed + "keychainfs: -u asks for the passphrase on the terminal, and there is none\n")
        XCTAssertEqual(try h.info()["state"] as? String, "locked")
        XCTAssertEqual(try h.run(["unlock-keychain", "-u", "-p", "pass phrase 1"]).status, 2)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
    }

    func testSettingsDashLAndDashU() throws {
        let l = try h.run(["set-keychain-settings", "-l", "-t", "600"])
        XCTAssertEqual(l.status, 0, "\(l)")
        XCTAssertEqual(l.stderr, "keychainfs: -l (lock when the system sleeps) has no effect here: keychainfs does not watch for suspend\n")
        XCTAssertEqual(try h.info()["lock-timeout"] as? Int, 600)
        // -u with -t: the timeout (as security, where -t implies -u).
        XCTAssertEqual(try h.run(["set-keychain-settings", "-u", "-t", "300"]).status, 0)
        XCTAssertEqual(try h.info()["lock-timeout"] as? Int, 300)
        // -u without -t: no timeout, as security reverts to none.
        let u = try h.run(["set-keychain-settings", "-u"])
        XCTAssertEqual(u.status, 0, "\(u)")
        XCTAssertEqual(u.stderr, "")
        XCTAssertEqual(try h.info()["lock-timeout"] as? Int, 0)
    }

    func testDeleteKeychainRemovesOnlyAVaultNoDaemonServes() throws {
        let second = h.dir + "/second.vault"
        try h.createVault(passphrase: "second pass", path: second)
        let served = try h.run(["delete-keychain", "--yes", second])
        XCTAssertEqual(served.status, 36, "\(served)")
        XCTAssertEqual(served.stderr, "keychainfs: a daemon serves \(second): run keychainfs stop \(second) first\n")
        XCTAssertTrue(FileManager.default.fileExists(atPath: second))
        XCTAssertEqual(try h.run(["stop", second]).status, 0)
        let unasked = try h.run(["delete-keychain", second], prefix: noTerminal)
        XCTAssertEqual(unasked.status, 2, "\(unasked)")
        XCTAssertTrue(unasked.stderr.hasPrefix("keychainfs: delete-keychain needs --yes when not on a terminal\n"), unasked.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: second))
        let gone = try h.run(["delete-keychain", "--yes", second])
        XCTAssertEqual(gone.status, 0, "\(gone)")
        XCTAssertEqual(gone.stdout + gone.stderr, "")
        let left = try FileManager.default.contentsOfDirectory(atPath: h.dir).filter { $0.hasPrefix("second.vault") }
        XCTAssertEqual(left, [], "the vault, its side files and its audit log are gone")
        let again = try h.run(["delete-keychain", "--yes", second])
        XCTAssertEqual(again.status, 50, "\(again)")
        XCTAssertEqual(again.stderr, Sentence.noSuchKeychain + "keychainfs: no vault at \(second)\n")
        // A file that is not a vault is never removed.
        let notVault = h.dir + "/notes.txt"
        XCTAssertTrue(FileManager.default.createFile(atPath: notVault, contents: Data("not a vault\n".utf8)))
        let refused = try h.run(["delete-keychain", "--yes", notVault])
        XCTAssertEqual(refused.status, 49, "\(refused)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: notVault))
        // The harness vault, served by its daemon, is untouched by all this.
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked")
    }

    func testDumpKeychainAccessFlags() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "acct", "-w", "-"], input: "x").status, 0)
        let a = try h.run(["dump-keychain", "-a"])
        XCTAssertEqual(a.status, 0, "\(a)")
        let owner = String(cString: getpwuid(getuid())!.pointee.pw_name), group = String(cString: getgrgid(getgid())!.pointee.gr_name)
        XCTAssertTrue(a.stdout.hasSuffix("    \"sync\"<uint32>=0\naccess: default owner=\(owner) group=\(group) mode=0400\n"), a.stdout)
        let json = try h.run(["dump-keychain", "-a", "--json"])
        XCTAssertEqual(json.status, 0, "\(json)")
        let items = (try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]) ?? []
        XCTAssertEqual(items.first?["access"] as? String, "default owner=\(owner) group=\(group) mode=0400")
        for flag in ["-i", "-r"] {
            let r = try h.run(["dump-keychain", flag])
            XCTAssertEqual(r.status, 2, "\(flag): \(r)")
            XCTAssertTrue(r.stderr.hasPrefix("keychainfs: dump-keychain \(flag) is not offered"), r.stderr)
            XCTAssertEqual(r.stdout, "")
        }
    }

    func testTrustedApplicationsBecomeAGroupsPrograms() throws {
        let tool = CLIHarness.realPath("/usr/bin/true")
        let add = try h.run(["add-generic-password", "-s", "git", "-a", "me", "-w", "-", "-T", "/usr/bin/true"], input: "s1")
        XCTAssertEqual(add.status, 0, "\(add)")
        // keychainfs, which added it, is trusted too (as security trusts itself): it reads the item.
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "git", "-a", "me", "-w"]).stdout, "s1\n")
        let text = try h.run(["find-generic-password", "-s", "git", "-a", "me"]).stdout
        guard let agrp = text.range(of: #"\"agrp\"<blob>=\"trusted-[0-9a-f]{12}\""#, options: .regularExpression) else {
            return XCTFail("not in a trusted- group: \(text)")
        }
        let group = String(text[agrp].dropFirst(14).dropLast())
        let programs = [tool, CLIHarness.canonicalBinary].sorted().joined(separator: ",")
        let list = try h.run(["group", "list"]).stdout
        XCTAssertTrue(list.contains("\n\(group) owner=root group=root mode=0400 exe=\(programs)\n"), list)
        // The same programs again: the same group, no second one.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "git", "-a", "you", "-w", "-", "-T", tool], input: "s2").status, 0)
        XCTAssertEqual(try h.run(["group", "list"]).stdout, list)
        // -A is the default here; -T with -A or --access-group, -T "" and a missing program exit 2.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "any", "-a", "me", "-w", "-", "-A"], input: "s3").status, 0)
        XCTAssertTrue(try h.run(["find-generic-password", "-s", "any"]).stdout.contains("    \"agrp\"<blob>=\"default\"\n"))
        for bad in [["-T", "/usr/bin/true", "-A"], ["-T", "/usr/bin/true", "--access-group", "default"], ["-T", ""], ["-T", h.dir + "/nosuch"]] {
            let r = try h.run(["add-generic-password", "-s", "bad", "-a", "me", "-w", "-"] + bad, input: "x")
            XCTAssertEqual(r.status, 2, "\(bad): \(r)")
        }
        XCTAssertEqual(try h.run(["group", "list"]).stdout, list, "no group made by a refused add")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "bad"]).status, 44)
    }
}
