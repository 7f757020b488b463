import Foundation
import KeychainClient
import KeychainCore
import KeychainProtocol
import KeychainTestSupport
import XCTest

/// Values the CLI must refuse before anything is sent: out-of-range numbers, deletes that name
/// no attribute, adds that name no item, bad mount options and group names. Each refusal exits 2
/// with a message naming the flag, and leaves the vault as it was.
final class CLIInputBoundsTests: XCTestCase {
    var h: CLIHarness!

    override func setUpWithError() throws {
        h = try CLIHarness()
        try h.createVault()
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "keep", "-a", "me", "-w", "-"], input: "kept").status, 0)
    }

    override func tearDown() {
        h?.tearDown()
        h = nil
        super.tearDown()
    }

    /// Runs `args` and asserts a usage error: exit 2, `message` first on stderr, then the verb's help.
    @discardableResult
    func assertUsage(_ args: [String], _ message: String, input: String? = nil,
                     file: StaticString = #filePath, line: UInt = #line) throws -> CLIHarness.Result {
        let r = try h.run(args, input: input, file: file, line: line)
        XCTAssertEqual(r.status, 2, "\(args): \(r)", file: file, line: line)
        XCTAssertTrue(r.stderr.hasPrefix("keychainfs: \(message)\nusage: keychainfs "), "\(args): \(r.stderr)", file: file, line: line)
        XCTAssertEqual(r.stdout, "", "\(args)", file: file, line: line)
        return r
    }

    func assertKeepSurvives(file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try h.run(["find-generic-password", "-s", "keep", "-a", "me", "-w"])
        XCTAssertEqual(r.stdout, "kept\n", "the item survived: \(r)", file: file, line: line)
    }

    /// The `svce` of every generic password, from `dump-keychain --json`.
    func services() throws -> [String] {
        let dump = try h.run(["dump-keychain", "--json"])
        let items = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [[String: Any]] ?? []
        return items.filter { $0["class"] as? String == "genp" }
            .map { (($0["attributes"] as? [String: Any])?["svce"] as? String) ?? "(none)" }.sorted()
    }

    // MARK: set-keychain-settings

    func testOutOfRangeSettingsAreRefusedAndChangeNothing() throws {
        XCTAssertEqual(try h.run(["set-keychain-settings", "-t", "300"]).status, 0)
        let pid = try h.daemonPID()
        let lock = "-t takes a number of seconds from 0 to 31536000; "
        let timeout = "--approval-timeout takes a number of seconds from 1 to 3600; "
        let remember = "--approval-remember takes a number of seconds from 0 to 86400; "
        let cases: [([String], String)] = [
            (["-t", "9223372036854775807"], lock + "9223372036854775807 is out of range"),
            (["-t", "99999999999999999999"], lock + "99999999999999999999 is out of range"),
            (["-t", "31536001"], lock + "31536001 is out of range"),
            (["-t", "-1"], lock + "-1 is out of range"),
            (["-t", "5m"], lock + "\"5m\" is not a number"),
            (["-t", "+5"], lock + "\"+5\" is not a number"),
            (["-t", ""], lock + "\"\" is not a number"),
            (["--approval-timeout", "2147484"], timeout + "2147484 is out of range"),
            (["--approval-timeout", "0"], timeout + "0 is out of range"),
            (["--approval-remember", "86401"], remember + "86401 is out of range"),
            (["--approval-remember", "soon"], remember + "\"soon\" is not a number"),
            // One bad value refuses the whole command: the good -t is not applied either.
            (["-t", "60", "--approval-timeout", "99999"], timeout + "99999 is out of range"),
        ]
        for (args, message) in cases {
            try assertUsage(["set-keychain-settings"] + args, message)
            XCTAssertEqual(try h.info()["lock-timeout"] as? Int, 300, "\(args) changed nothing")
        }
        XCTAssertEqual(try h.daemonPID(), pid, "the daemon kept running")
        // The largest values are accepted, and the daemon's status computation copes with them.
        XCTAssertEqual(try h.run(["set-keychain-settings", "-t", "31536000", "--approval-timeout", "3600",
                                  "--approval-remember", "86400"]).status, 0)
        XCTAssertEqual(try h.info()["lock-timeout"] as? Int, 31_536_000)
        let status = try h.run(["status"])
        XCTAssertEqual(status.status, 0, "\(status)")
        XCTAssertTrue(status.stdout.contains("idle lock in "), status.stdout)
        XCTAssertEqual(try h.daemonPID(), pid)
    }

    /// A client other than the CLI meets the same ranges at the daemon, as errSecParam.
    func testTheDaemonRefusesTheSameRanges() throws {
        XCTAssertEqual(try h.run(["set-keychain-settings", "-t", "300"]).status, 0)
        let pid = try h.daemonPID()
        let socket = try FileManager.default.contentsOfDirectory(atPath: h.runtimeDir).first { $0.hasSuffix(".sock") }
        let client = try DaemonClient.connect(socketPath: h.runtimeDir + "/" + XCTUnwrap(socket))
        let cases: [(OptionKey, Int64)] = [("lock-timeout", .max), ("lock-timeout", 31_536_001), ("lock-timeout", -1),
                                        ("approval-timeout", 2_147_484), ("approval-timeout", 0), ("approval-remember", 86_401)]
        for (name, n) in cases {
            XCTAssertThrowsError(try client.send(Request(.setSettings, options: [name: .number(n)])), "\(name) \(n)") { error in
                XCTAssertEqual(error as? KeychainStatus, .param, "\(name) \(n)")
            }
        }
        XCTAssertEqual(try h.info()["lock-timeout"] as? Int, 300)
        XCTAssertEqual(try h.run(["status"]).status, 0)
        XCTAssertEqual(try h.daemonPID(), pid)
    }

    func testApprovalProgramMustBeAnExecutableFile() throws {
        let plain = h.dir + "/not-executable"
        XCTAssertTrue(FileManager.default.createFile(atPath: plain, contents: Data("#!/bin/sh\n".utf8)))
        for p in [h.dir + "/missing", h.dir, plain] {
            try assertUsage(["set-keychain-settings", "--approval-program", p],
                            "--approval-program takes an executable file (or \"\" to remove it); \"\(p)\" is not one")
        }
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", "/bin/true"]).status, 0)
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", ""]).status, 0)
    }

    // MARK: delete

    func testDeleteWithoutAnAttributeIsRefusedAndAllDeletesEverything() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "other", "-a", "you", "-w", "-"], input: "o").status, 0)
        XCTAssertEqual(try h.run(["add-internet-password", "-s", "example.org", "-a", "me", "-w", "-"], input: "i").status, 0)
        let everything = "delete-generic-password without an attribute flag (-s, -a, ...) would delete every generic-password item you may change; give --all to do that"
        try assertUsage(["delete-generic-password"], everything)
        // An access group alone is no attribute of the item: it would still delete them all.
        try assertUsage(["delete-generic-password", "--access-group", "default"], everything)
        try assertUsage(["delete-generic-password", "--all", "-s", "keep"], "--all deletes every item; give it without attribute flags")
        try assertUsage(["delete-internet-password"],
                        "delete-internet-password without an attribute flag (-s, -a, ...) would delete every internet-password item you may change; give --all to do that")
        try assertKeepSurvives()
        XCTAssertEqual(try services(), ["keep", "other"])
        XCTAssertEqual(try h.run(["find-internet-password", "-s", "example.org", "-w"]).stdout, "i\n")

        let help = try h.run(["delete-generic-password", "--help"])
        XCTAssertTrue(help.stdout.contains("--all        delete every generic-password item you may change"), help.stdout)
        let all = try h.run(["delete-generic-password", "--all"])
        XCTAssertEqual(all.status, 0, "\(all)")
        XCTAssertEqual(all.stdout, "password has been deleted.\n")
        XCTAssertEqual(try services(), [])
        XCTAssertEqual(try h.run(["find-internet-password", "-s", "example.org", "-w"]).stdout, "i\n", "--all is per class")
        XCTAssertEqual(try h.run(["delete-internet-password", "--all"]).status, 0)
        XCTAssertEqual(try h.run(["find-internet-password", "-s", "example.org"]).status, 44)
        // Nothing left to delete: as a delete by attributes, not found.
        XCTAssertEqual(try h.run(["delete-generic-password", "--all"]).status, 44)
    }

    // MARK: add

    func testAddNamingNoItemStoresNothing() throws {
        try assertUsage(["add-generic-password", "-w", "-"], "add-generic-password needs -s SERVICE or -a ACCOUNT", input: "lost")
        try assertUsage(["add-generic-password"], "add-generic-password needs -s SERVICE or -a ACCOUNT")
        try assertUsage(["add-generic-password", "-l", "label only", "-w", "-"], "add-generic-password needs -s SERVICE or -a ACCOUNT", input: "x")
        try assertUsage(["add-internet-password", "-w", "-"], "add-internet-password needs -s SERVER or -a ACCOUNT", input: "lost")
        for list in ["", "userPresence,,or", ","] {
            try assertUsage(["add-generic-password", "-s", "gated", "-w", "-", "--access-control", list],
                            "--access-control takes flags separated by commas, such as userPresence or biometryAny,or,devicePasscode", input: "x")
        }
        XCTAssertEqual(try services(), ["keep"], "no empty item was stored")
        XCTAssertEqual(try h.run(["find-internet-password", "-w"]).status, 44)
        // An account alone names an item.
        XCTAssertEqual(try h.run(["add-generic-password", "-a", "solo", "-w", "-"], input: "s").status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-a", "solo", "-w"]).stdout, "s\n")
    }

    func testPortsAndFourCharacterCodesAreChecked() throws {
        let add = ["add-internet-password", "-s", "db.example.org", "-a", "admin", "-w", "-"]
        let port = "-P takes a port number from 0 to 65535; "
        let cases: [([String], String)] = [
            (["-P", "notaport"], port + "\"notaport\" is not a number"),
            (["-P", "65536"], port + "65536 is out of range"),
            (["-P", "-1"], port + "-1 is out of range"),
            (["-P", "0x50"], port + "\"0x50\" is not a number"),
            (["-r", "https"], "-r takes a protocol code of exactly four characters (such as htps or \"ftp \"); \"https\" is not one"),
            (["-r", "ftp"], "-r takes a protocol code of exactly four characters (such as htps or \"ftp \"); \"ftp\" is not one"),
            (["-t", "basic"], "-t takes an authentication type code of exactly four characters (such as dflt); \"basic\" is not one"),
            (["-c", "me"], "-c takes a creator code of exactly four characters (such as aapl); \"me\" is not one"),
        ]
        for (args, message) in cases {
            try assertUsage(add + args, message, input: "never")
            try assertUsage(["find-internet-password", "-s", "db.example.org"] + args, message)
            try assertUsage(["delete-internet-password", "-s", "db.example.org"] + args, message)
        }
        try assertUsage(["add-generic-password", "-s", "x", "-C", "toolong", "-w", "-"],
                        "-C takes a type code of exactly four characters (such as note); \"toolong\" is not one", input: "never")
        XCTAssertEqual(try h.run(["find-internet-password", "-s", "db.example.org"]).status, 44, "nothing was added")
        XCTAssertEqual(try services(), ["keep"])
        // The edges are accepted.
        XCTAssertEqual(try h.run(add + ["-P", "65535", "-r", "ftp ", "-t", "dflt"], input: "ok").status, 0)
        XCTAssertEqual(try h.run(["find-internet-password", "-s", "db.example.org", "-P", "065535", "-w"]).stdout, "ok\n")
        let json = h.jsonObject(try h.run(["find-internet-password", "-s", "db.example.org", "--json"]).stdout)
        let attrs = json["attributes"] as? [String: Any]
        XCTAssertEqual(attrs?["port"] as? Int, 65535)
        XCTAssertEqual(attrs?["ptcl"] as? String, "ftp ")
    }

    // MARK: group

    func testGroupNamesModesAndIdsAreChecked() throws {
        try assertUsage(["group", "add", ""], "group add needs a NAME; the name is empty")
        try assertUsage(["group", "set", "", "--mode", "0440"], "group set needs a NAME; the name is empty")
        for name in ["a b", "a,b", "a:b", "tab\there", String(repeating: "g", count: 256)] {
            try assertUsage(["group", "add", name],
                            "a group name is 1 to 255 bytes without spaces, control characters, commas or colons; \(jsonQuoted(name)) is not one")
        }
        let mode = "--mode takes an octal mode from 0 to 0777, such as 0440; "
        try assertUsage(["group", "add", "x", "--mode", "1000"], mode + "1000 is out of range")
        try assertUsage(["group", "add", "x", "--mode", "8"], mode + "\"8\" is not an octal number")
        try assertUsage(["group", "add", "x", "--mode", "+7"], mode + "\"+7\" is not an octal number")
        try assertUsage(["group", "add", "x", "--mode", ""], mode + "\"\" is not an octal number")
        try assertUsage(["group", "add", "x", "--owner", "4294967295"],
                        "--owner takes a user name or a uid from 0 to 4294967294; 4294967295 is out of range")
        try assertUsage(["group", "add", "x", "--group", "-1"], "--group takes a group name or a gid from 0 to 4294967294; -1 is out of range")
        try assertUsage(["group", "add", "x", "--group", "+0"], "--group takes a group name or a gid from 0 to 4294967294; \"+0\" is not a number")
        try assertUsage(["group", "add", "x", "--exe", ""], "--exe takes the path of a program; \"\" is not one")
        try assertUsage(["group", "add", "x", "--exe", "/bin/true\n/bin/sh"], "--exe takes the path of a program; \"/bin/true\\n/bin/sh\" is not one")
        try assertUsage(["group", "list", "--mode", "0440"], "group list takes no --mode")
        try assertUsage(["group", "remove", "default", "--owner", "0"], "group remove takes no --owner")
        let list = try h.run(["group", "list"])
        XCTAssertEqual(list.stdout, "default owner=root group=root mode=0400\n", "no group was added")
        XCTAssertEqual(try h.run(["group", "add", "x", "--mode", "0777", "--owner", "0", "--group", "0"]).status, 0)
    }

    // MARK: mount

    func testMountOptionsAreCheckedBeforeTheDaemonIsAsked() throws {
        let point = h.dir + "/mnt"
        try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: true)
        try assertUsage(["mount", "-o", "bogus", point], "unknown or malformed mount option \"bogus\"; see keychainfs help mount")
        try assertUsage(["mount", "-o", "ro,map_uid=x", point], "unknown or malformed mount option \"map_uid=x\"; see keychainfs help mount")
        try assertUsage(["mount", "-o", "ro", "-o", "groups=", point], "unknown or malformed mount option \"groups=\"; see keychainfs help mount")
        try assertUsage(["mount", "--map-owner", "1000", point], "--map-owner takes UID:GID, such as 1000:1000")
        try assertUsage(["mount", "--map-owner", "1000:4294967295", point],
                        "--map-owner takes a UID:GID with each from 0 to 4294967294; 4294967295 is out of range")
        try assertUsage(["mount", "--groups", "team,,ci", point], "--groups takes group names separated by commas, such as team,ci")
        // The mount.fuse3 form goes through the same parser.
        try assertUsage([h.vault, point, "-o", "rw,bogus"], "unknown or malformed mount option \"bogus\"; see keychainfs help mount")
        let mounts = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        XCTAssertFalse(mounts.contains(" \(point) "), "nothing was mounted")
    }

    // MARK: help

    func testHelpForAnUnknownVerbIsAUsageError() throws {
        for args in [["help", "NOSUCHVERB"], ["--help", "NOSUCHVERB"], ["help", "add-generic-password", "extra"]] {
            let r = try h.run(args)
            XCTAssertEqual(r.status, 2, "\(args): \(r)")
            XCTAssertEqual(r.stdout, "")
            let first = args.count == 2 ? "keychainfs: no such verb \"NOSUCHVERB\"\n" : "keychainfs: help takes one verb\n"
            XCTAssertTrue(r.stderr.hasPrefix(first + "usage: keychainfs COMMAND [OPTIONS] [VAULT]\n"), "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("\n    delete-generic-password "), "the verbs are listed: \(r.stderr)")
        }
        XCTAssertEqual(try h.run(["help", "group"]).status, 0)
    }

    func jsonQuoted(_ s: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: s, options: [.fragmentsAllowed, .withoutEscapingSlashes]), as: UTF8.self)
    }
}
