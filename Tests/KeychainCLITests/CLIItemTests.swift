import Foundation
import KeychainTestSupport
import XCTest

/// Apple's sentences as the CLI prints them on standard error.
enum Sentence {
    static let notFound = "keychainfs: The specified item could not be found in the keychain.\n"
    static let duplicate = "keychainfs: The specified item already exists in the keychain.\n"
    static let interactionNotAllowed = "keychainfs: User interaction is not allowed.\n"
    static let authFailed = "keychainfs: The user name or passphrase you entered is not correct.\n"
    static let missingEntitlement = "keychainfs: A required entitlement isn't present.\n"
    static let param = "keychainfs: One or more parameters passed to a function were not valid.\n"
    static let noSuchKeychain = "keychainfs: The specified keychain could not be found.\n"
    static let notAvailable = "keychainfs: No keychain is available. You may need to restart your computer.\n"
    /// The line after Apple's errSecInteractionNotAllowed sentence when the vault is locked.
    static let vaultLocked = "keychainfs: the vault is locked: run keychainfs unlock-keychain\n"
    /// The warning for a secret given as `-w VALUE` on the command line.
    static let secretInArgv = "keychainfs: a secret on the command line is visible to other users; prefer -w - with standard input\n"
}

/// The item verbs end to end: real binary, real daemon, real vault file.
final class CLIItemTests: HarnessTestCase {
    // MARK: add / find / delete

    func testAddThenFindPrintsExactlyTheSecret() throws {
        let add = try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "secret"])
        XCTAssertEqual(add.status, 0, "\(add)")
        XCTAssertEqual(add.stdout, "")
        XCTAssertEqual(add.stderr, Sentence.secretInArgv)
        let quiet = try h.run(["add-generic-password", "-s", "db", "-a", "quiet", "-w", "-"], input: "secret")
        XCTAssertEqual(quiet.status, 0, "\(quiet)")
        XCTAssertEqual(quiet.stdout + quiet.stderr, "", "-w - gives no warning")
        let find = try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w"])
        XCTAssertEqual(find.status, 0, "\(find)")
        XCTAssertEqual(find.stdout, "secret\n")
        XCTAssertEqual(find.stderr, "")
        // Service alone and account alone find it too.
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-w"]).stdout, "secret\n")
        XCTAssertEqual(try h.run(["find-generic-password", "-a", "app", "-w"]).stdout, "secret\n")
        XCTAssertEqual(try h.run(["find-generic-password", "-a", "quiet", "-w"]).stdout, "secret\n")
    }

    func testDuplicateAddExits45() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "one"]).status, 0)
        let dup = try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "two"])
        XCTAssertEqual(dup.status, 45, "\(dup)")
        XCTAssertEqual(dup.stdout, "")
        XCTAssertEqual(dup.stderr, Sentence.secretInArgv + Sentence.duplicate)
        let dupStdin = try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "-"], input: "three")
        XCTAssertEqual(dupStdin.status, 45, "\(dupStdin)")
        XCTAssertEqual(dupStdin.stderr, Sentence.duplicate)
        // The first secret is untouched.
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w"]).stdout, "one\n")
    }

    func testUpdateFlagReplacesSecretAndAttributes() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "one", "-l", "old label"]).status, 0)
        let u = try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "two", "-l", "new label", "-U"])
        XCTAssertEqual(u.status, 0, "\(u)")
        XCTAssertEqual(u.stderr, Sentence.secretInArgv)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w"]).stdout, "two\n")
        let text = try h.run(["find-generic-password", "-s", "db", "-a", "app"]).stdout
        XCTAssertTrue(text.contains("    \"labl\"<blob>=\"new label\"\n"), text)
        // Still one item, and -U on a missing item simply adds it.
        XCTAssertEqual(try h.info()["items"] as? Int, 1)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "other", "-w", "three", "-U"]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "other", "-w"]).stdout, "three\n")
        XCTAssertEqual(try h.info()["items"] as? Int, 2)
    }

    func testSecretFromStandardInput() throws {
        let cases: [(account: String, input: String, stored: String)] = [
            ("newline", "from stdin\n", "from stdin"),          // one trailing newline dropped
            ("bare", "no newline", "no newline"),
            ("utf8", "pass word ü € 🔑 \"q\" \\ x\n", "pass word ü € 🔑 \"q\" \\ x"),
            ("two", "kept\n\n", "kept\n"),                      // only one newline is dropped
            ("spaces", "  lead and trail  ", "  lead and trail  "),
        ]
        for c in cases {
            let add = try h.run(["add-generic-password", "-s", "stdin", "-a", c.account, "-w", "-"], input: c.input)
            XCTAssertEqual(add.status, 0, "\(c.account): \(add)")
            let find = try h.run(["find-generic-password", "-s", "stdin", "-a", c.account, "-w"])
            XCTAssertEqual(find.status, 0, "\(c.account): \(find)")
            XCTAssertEqual(find.stdout, c.stored + "\n", c.account)
        }
        // -w at the end of the line with standard input not a terminal reads standard input too.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "stdin", "-a", "last", "-w"], input: "tail\n").status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "stdin", "-a", "last", "-w"]).stdout, "tail\n")
        // -U with -w - replaces from standard input.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "stdin", "-a", "bare", "-U", "-w", "-"], input: "replaced").status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "stdin", "-a", "bare", "-w"]).stdout, "replaced\n")
    }

    func testMissingItemExits44() throws {
        let r = try h.run(["find-generic-password", "-s", "nothing", "-a", "here", "-w"])
        XCTAssertEqual(r.status, 44, "\(r)")
        XCTAssertEqual(r.stdout, "")
        XCTAssertEqual(r.stderr, Sentence.notFound)
        let i = try h.run(["find-internet-password", "-s", "nothing.example"])
        XCTAssertEqual(i.status, 44, "\(i)")
        XCTAssertEqual(i.stderr, Sentence.notFound)
    }

    func testDeleteThenFindExits44() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "secret"]).status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "keep", "-w", "kept"]).status, 0)
        let del = try h.run(["delete-generic-password", "-s", "db", "-a", "app"])
        XCTAssertEqual(del.status, 0, "\(del)")
        XCTAssertEqual(del.stdout, "password has been deleted.\n")
        let find = try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w"])
        XCTAssertEqual(find.status, 44, "\(find)")
        XCTAssertEqual(find.stderr, Sentence.notFound)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "keep", "-w"]).stdout, "kept\n")
        let again = try h.run(["delete-generic-password", "-s", "db", "-a", "app"])
        XCTAssertEqual(again.status, 44, "\(again)")
        XCTAssertEqual(again.stdout, "")
        XCTAssertEqual(again.stderr, Sentence.notFound)
    }

    func testLabelAndCommentInFindOutput() throws {
        let add = try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "secret",
                             "-l", "My \"quoted\" label", "-j", "a comment", "-D", "kind", "-G", "gen"])
        XCTAssertEqual(add.status, 0, "\(add)")
        let r = try h.run(["find-generic-password", "-s", "db", "-a", "app"])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertEqual(r.stderr, "", "no password without -g")
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(Array(lines.prefix(3)), ["keychain: \"\(h.vault)\"", "class: \"genp\"", "attributes:"])
        for expected in ["    \"acct\"<blob>=\"app\"", "    \"svce\"<blob>=\"db\"",
                         "    \"labl\"<blob>=\"My \\\"quoted\\\" label\"", "    \"icmt\"<blob>=\"a comment\"",
                         "    \"desc\"<blob>=\"kind\"", "    \"gena\"<blob>=\"gen\"",
                         "    \"agrp\"<blob>=\"default\"", "    \"pdmn\"<blob>=\"ak\"", "    \"sync\"<uint32>=0"] {
            XCTAssertTrue(lines.contains(expected), "missing \(expected) in\n\(r.stdout)")
        }
        XCTAssertTrue(lines.contains { $0.hasPrefix("    \"cdat\"<timedate>=\"20") && $0.hasSuffix("Z\"") }, r.stdout)
        XCTAssertFalse(r.stdout.contains("secret"), "the secret is not printed without -w/-g")
        XCTAssertEqual(lines.last, "", "output ends with a newline")
    }

    func testJSONOutput() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "sécret \"x\"", "-l", "L"]).status, 0)
        let plain = try h.run(["find-generic-password", "-s", "db", "--json"])
        XCTAssertEqual(plain.status, 0, "\(plain)")
        XCTAssertTrue(plain.stdout.hasSuffix("}\n"))
        let obj = h.jsonObject(plain.stdout)
        XCTAssertEqual(obj["keychain"] as? String, h.vault)
        XCTAssertEqual(obj["class"] as? String, "genp")
        let attrs = obj["attributes"] as? [String: Any] ?? [:]
        XCTAssertEqual(attrs["svce"] as? String, "db")
        XCTAssertEqual(attrs["acct"] as? String, "app")
        XCTAssertEqual(attrs["labl"] as? String, "L")
        XCTAssertEqual(attrs["agrp"] as? String, "default")
        XCTAssertEqual(attrs["pdmn"] as? String, "ak")
        XCTAssertNil(obj["password"], "no password without -w or -g")
        for flag in ["-w", "-g"] {
            let r = try h.run(["find-generic-password", "-s", "db", flag, "--json"])
            XCTAssertEqual(r.status, 0, "\(flag): \(r)")
            let o = h.jsonObject(r.stdout)
            XCTAssertEqual(o["password"] as? String, "sécret \"x\"", flag)
            XCTAssertEqual((o["attributes"] as? [String: Any])?["svce"] as? String, "db", flag)
        }
        // Reading verbs besides find: status, show-keychain-info, group list, dump-keychain.
        XCTAssertEqual(h.jsonObject(try h.run(["status", "--json"]).stdout)["daemon"] as? Bool, true)
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked")
        let groups = try h.run(["group", "list", "--json"])
        let list = try JSONSerialization.jsonObject(with: Data(groups.stdout.utf8)) as? [[String: Any]]
        XCTAssertEqual(list?.map { $0["name"] as? String }, ["default"])
        XCTAssertEqual(list?.first?["mode"] as? String, "0400", "modes as octal strings")
        XCTAssertEqual(list?.first?["exe"] as? [String], [], "programs as an array")
    }

    func testDashGPrintsPasswordOnStandardError() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "secret \"quoted\""]).status, 0)
        let r = try h.run(["find-generic-password", "-s", "db", "-a", "app", "-g"])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertEqual(r.stderr, "password: \"secret \\\"quoted\\\"\"\n")
        XCTAssertTrue(r.stdout.hasPrefix("keychain: \"\(h.vault)\"\nclass: \"genp\"\n"), r.stdout)
        XCTAssertFalse(r.stdout.contains("secret"), "the password goes to standard error only")
        // A secret that is not printable text is shown in hex.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "bin", "-w", "-"], input: "a\u{01}b").status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "bin", "-g"]).stderr, "password: 0x610162\n")
    }

    // MARK: internet passwords

    func testInternetPasswordsKeyIncludesPort() throws {
        func add(_ port: String, _ secret: String) throws -> CLIHarness.Result {
            try h.run(["add-internet-password", "-s", "example.com", "-a", "alice", "-r", "htps", "-P", port,
                       "-p", "/login", "-w", secret])
        }
        XCTAssertEqual(try add("443", "pw443").status, 0)
        let other = try add("8443", "pw8443")
        XCTAssertEqual(other.status, 0, "same server and account on another port is another item: \(other)")
        let dup = try add("443", "again")
        XCTAssertEqual(dup.status, 45, "\(dup)")
        XCTAssertEqual(dup.stderr, Sentence.secretInArgv + Sentence.duplicate)

        func find(_ extra: [String]) throws -> CLIHarness.Result {
            try h.run(["find-internet-password", "-s", "example.com", "-a", "alice"] + extra)
        }
        XCTAssertEqual(try find(["-P", "443", "-w"]).stdout, "pw443\n")
        XCTAssertEqual(try find(["-P", "8443", "-w"]).stdout, "pw8443\n")
        XCTAssertEqual(try find(["-P", "443", "-r", "htps", "-p", "/login", "-w"]).stdout, "pw443\n")
        XCTAssertEqual(try find(["-P", "80", "-w"]).status, 44)
        XCTAssertEqual(try find(["-p", "/other", "-w"]).status, 44)

        let text = try find(["-P", "443"])
        XCTAssertEqual(text.status, 0, "\(text)")
        XCTAssertTrue(text.stdout.hasPrefix("keychain: \"\(h.vault)\"\nclass: \"inet\"\n"), text.stdout)
        for line in ["    \"srvr\"<blob>=\"example.com\"", "    \"acct\"<blob>=\"alice\"", "    \"port\"<uint32>=443",
                     "    \"path\"<blob>=\"/login\""] {
            XCTAssertTrue(text.stdout.contains(line + "\n"), "missing \(line) in\n\(text.stdout)")
        }
        XCTAssertTrue(text.stdout.contains("\"ptcl\""), text.stdout)
        let json = h.jsonObject(try find(["-P", "8443", "--json", "-w"]).stdout)
        XCTAssertEqual(json["class"] as? String, "inet")
        XCTAssertEqual((json["attributes"] as? [String: Any])?["port"] as? Int, 8443)
        XCTAssertEqual(json["password"] as? String, "pw8443")

        let del = try h.run(["delete-internet-password", "-s", "example.com", "-a", "alice", "-P", "443"])
        XCTAssertEqual(del.status, 0, "\(del)")
        XCTAssertEqual(del.stdout, "password has been deleted.\n")
        let gone = try find(["-P", "443", "-w"])
        XCTAssertEqual(gone.status, 44, "\(gone)")
        XCTAssertEqual(gone.stderr, Sentence.notFound)
        XCTAssertEqual(try find(["-P", "8443", "-w"]).stdout, "pw8443\n")
        // Generic and internet passwords are separate classes.
        XCTAssertEqual(try h.run(["find-generic-password", "-a", "alice"]).status, 44)
    }

    // MARK: dump-keychain

    func testDumpKeychainListsEveryItem() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "gsecret"]).status, 0)
        XCTAssertEqual(try h.run(["add-internet-password", "-s", "example.com", "-a", "bob", "-w", "isecret"]).status, 0)
        let text = try h.run(["dump-keychain"])
        XCTAssertEqual(text.status, 0, "\(text)")
        XCTAssertEqual(text.stdout.components(separatedBy: "keychain: \"\(h.vault)\"\n").count - 1, 2, text.stdout)
        XCTAssertTrue(text.stdout.contains("class: \"genp\"\n"))
        XCTAssertTrue(text.stdout.contains("class: \"inet\"\n"))
        XCTAssertTrue(text.stdout.contains("    \"svce\"<blob>=\"db\"\n"))
        XCTAssertTrue(text.stdout.contains("    \"srvr\"<blob>=\"example.com\"\n"))
        XCTAssertFalse(text.stdout.contains("gsecret") || text.stdout.contains("isecret"), "no secrets without -d")

        let withData = try h.run(["dump-keychain", "-d"])
        XCTAssertTrue(withData.stdout.contains("data:\n\"gsecret\"\n"), withData.stdout)
        XCTAssertTrue(withData.stdout.contains("data:\n\"isecret\"\n"), withData.stdout)

        let json = try h.run(["dump-keychain", "--json"])
        XCTAssertEqual(json.status, 0, "\(json)")
        let array = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
        XCTAssertEqual(array?.count, 2, json.stdout)
        XCTAssertEqual(Set(array?.compactMap { $0["class"] as? String } ?? []), ["genp", "inet"])
        XCTAssertTrue(array?.allSatisfy { $0["password"] == nil } ?? false)
        let jsonData = try h.run(["dump-keychain", "--json", "-d"])
        let withPasswords = try JSONSerialization.jsonObject(with: Data(jsonData.stdout.utf8)) as? [[String: Any]]
        XCTAssertEqual(Set(withPasswords?.compactMap { $0["password"] as? String } ?? []), ["gsecret", "isecret"])

        // An empty vault dumps as nothing, and as an empty JSON array.
        XCTAssertEqual(try h.run(["delete-generic-password", "-s", "db"]).status, 0)
        XCTAssertEqual(try h.run(["delete-internet-password", "-s", "example.com"]).status, 0)
        XCTAssertEqual(try h.run(["dump-keychain"]).stdout, "")
        XCTAssertEqual(try h.run(["dump-keychain", "--json"]).stdout, "[]\n")
    }

    // MARK: vault selection

    func testPositionalVaultOverridesEnvironment() throws {
        let other = h.dir + "/other.vault"
        try h.createVault(passphrase: "other pass", path: other)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "in-other", other]).status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "in-env"]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-w", other]).stdout, "in-other\n")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-w"]).stdout, "in-env\n")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-w", h.vault]).stdout, "in-env\n")
        // Only in the other vault.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "only", "-a", "x", "-w", "o", other]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "only"]).status, 44)
        let json = h.jsonObject(try h.run(["find-generic-password", "-s", "only", "--json", other]).stdout)
        XCTAssertEqual(json["keychain"] as? String, other)
        // Each vault has its own daemon.
        let pidEnv = try h.daemonPID(), pidOther = try h.daemonPID([other])
        XCTAssertNotNil(pidEnv)
        XCTAssertNotNil(pidOther)
        XCTAssertNotEqual(pidEnv, pidOther)
        // The positional vault also wins with KEYCHAINFS_VAULT pointing somewhere else.
        let r = try h.run(["find-generic-password", "-s", "only", "-w", other], env: ["KEYCHAINFS_VAULT": h.dir + "/nope.vault"])
        XCTAssertEqual(r.stdout, "o\n")
        XCTAssertEqual(try h.run(["stop", other]).status, 0)
        XCTAssertNil(try h.daemonPID([other]))
    }

    func testMissingVaultExits50() throws {
        let r = try h.run(["find-generic-password", "-s", "db", h.dir + "/missing.vault"])
        XCTAssertEqual(r.status, 50, "\(r)")
        XCTAssertEqual(r.stderr, Sentence.noSuchKeychain + "keychainfs: no vault at \(h.dir)/missing.vault: "
                       + "create one with keychainfs create-keychain \(h.dir)/missing.vault\n")
        XCTAssertEqual(try h.run(["status", h.dir + "/missing.vault"]).stdout, "\(h.dir)/missing.vault: no daemon running\n")
    }

    // MARK: usage and help

    func testUsageErrorsExit2() throws {
        let unknown = try h.run(["add-generic-password", "-s", "db", "-a", "app", "-w", "x", "--bogus"])
        XCTAssertEqual(unknown.status, 2, "\(unknown)")
        XCTAssertEqual(unknown.stdout, "")
        XCTAssertTrue(unknown.stderr.hasPrefix("keychainfs: unknown option --bogus\nusage: keychainfs add-generic-password "), unknown.stderr)
        let missing = try h.run(["find-generic-password", "-s"])
        XCTAssertEqual(missing.status, 2, "\(missing)")
        XCTAssertTrue(missing.stderr.hasPrefix("keychainfs: option -s needs a value\nusage: keychainfs find-generic-password "), missing.stderr)
        let many = try h.run(["find-generic-password", "-s", "db", "one.vault", "two.vault"])
        XCTAssertEqual(many.status, 2, "\(many)")
        XCTAssertTrue(many.stderr.hasPrefix("keychainfs: too many arguments\n"), many.stderr)
        let verb = try h.run(["frobnicate"])
        XCTAssertEqual(verb.status, 2, "\(verb)")
        XCTAssertEqual(verb.stderr, "keychainfs: unknown command \"frobnicate\"; see keychainfs help\n")
        let none = try h.run([])
        XCTAssertEqual(none.status, 2, "\(none)")
        XCTAssertTrue(none.stderr.hasPrefix("usage: keychainfs COMMAND"), none.stderr)
        for args in [["set-keychain-settings", "-t", "soon"], ["create-keychain", "--kdf", "cheap", h.dir + "/x.vault"],
                     ["group", "frob"], ["group", "add"], ["group", "set", "x", "--mode", "999"]] {
            let r = try h.run(args, input: "p\n")
            XCTAssertEqual(r.status, 2, "\(args): \(r)")
            XCTAssertTrue(r.stderr.hasPrefix("keychainfs: "), "\(args): \(r.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir + "/x.vault"), "a usage error creates nothing")
        // Nothing was added by the rejected command.
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db"]).status, 44)
    }

    func testVersionNamesTheReleaseAndFormats() throws {
        for flag in ["--version", "version"] {
            let r = try h.run([flag])
            XCTAssertEqual(r.status, 0, "\(r)")
            XCTAssertTrue(r.stdout.hasPrefix("keychainfs ") && r.stdout.contains("socket protocol 1, backup format 2)\n"), r.stdout)
            XCTAssertEqual(r.stderr, "")
        }
    }

    func testHelpForEveryVerb() throws {
        let overview = try h.run(["help"])
        XCTAssertEqual(overview.status, 0, "\(overview)")
        XCTAssertTrue(overview.stdout.hasPrefix("usage: keychainfs COMMAND [OPTIONS] [VAULT]\n"), overview.stdout)
        XCTAssertEqual(overview.stderr, "")
        let verbs = ["create-keychain", "unlock-keychain", "lock-keychain", "show-keychain-info", "set-keychain-settings",
                     "set-keychain-password", "status", "daemon", "stop", "add-generic-password", "find-generic-password",
                     "delete-generic-password", "add-internet-password", "find-internet-password",
                     "delete-internet-password", "dump-keychain", "group", "secret-service"]
        for v in verbs {
            XCTAssertTrue(overview.stdout.contains("\n    \(v) "), "overview lists \(v)")
            for args in [["help", v], [v, "--help"], [v, "-h"]] {
                let r = try h.run(args)
                XCTAssertEqual(r.status, 0, "\(args): \(r)")
                XCTAssertTrue(r.stdout.hasPrefix("usage: keychainfs \(v) "), "\(args): \(r.stdout)")
                XCTAssertEqual(r.stderr, "", "\(args)")
            }
        }
        XCTAssertEqual(try h.run(["--help"]).stdout, overview.stdout)
        XCTAssertTrue(try h.run(["help", "init"]).stdout.hasPrefix("usage: keychainfs create-keychain "))
        let add = try h.run(["add-generic-password", "--help"])
        for flag in ["-s SERVICE", "-a ACCOUNT", "-w PASSWORD", "-U", "--accessible CLASS", "--synchronizable", "-l LABEL", "-j COMMENT"] {
            XCTAssertTrue(add.stdout.contains(flag), "add-generic-password help mentions \(flag)")
        }
        // --help does not run the verb.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "db", "-a", "x", "-w", "y", "--help"]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db"]).status, 44)
    }

    // MARK: --accessible and --synchronizable

    func testAccessibleTakesAppleNamesAndRawValues() throws {
        let cases: [(String, String)] = [
            ("WhenUnlocked", "ak"), ("AfterFirstUnlock", "ck"), ("Always", "dk"),
            ("WhenUnlockedThisDeviceOnly", "aku"), ("AfterFirstUnlockThisDeviceOnly", "cku"),
            ("AlwaysThisDeviceOnly", "dku"), ("WhenPasscodeSetThisDeviceOnly", "akpu"),
            ("kSecAttrAccessibleAfterFirstUnlock", "ck"), ("ak", "ak"), ("cku", "cku"), ("dk", "dk"), ("akpu", "akpu"),
        ]
        for (i, (name, raw)) in cases.enumerated() {
            let add = try h.run(["add-generic-password", "-s", "acc", "-a", "a\(i)", "-w", "s\(i)", "--accessible", name])
            XCTAssertEqual(add.status, 0, "\(name): \(add)")
            let r = try h.run(["find-generic-password", "-s", "acc", "-a", "a\(i)", "-w", "--json"])
            let obj = h.jsonObject(r.stdout)
            XCTAssertEqual((obj["attributes"] as? [String: Any])?["pdmn"] as? String, raw, name)
            XCTAssertEqual(obj["password"] as? String, "s\(i)", name)
        }
        let bad = try h.run(["add-generic-password", "-s", "acc", "-a", "bad", "-w", "s", "--accessible", "Sometimes"])
        XCTAssertEqual(bad.status, 2, "\(bad)")
        XCTAssertTrue(bad.stderr.hasPrefix("keychainfs: unknown protection class Sometimes\n"), bad.stderr)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "acc", "-a", "bad"]).status, 44)
        let missing = try h.run(["add-generic-password", "-s", "acc", "-a", "bad", "-w", "s", "--accessible"])
        XCTAssertEqual(missing.status, 2, "\(missing)")
        let info = try h.info()
        XCTAssertEqual(info["count.ak"] as? Int, 2)
        XCTAssertEqual(info["count.ck"] as? Int, 2)
        XCTAssertEqual(info["count.akpu"] as? Int, 2)
    }

    func testSynchronizableItemsAreStoredAndUpdatable() throws {
        let add = try h.run(["add-generic-password", "-s", "sync", "-a", "app", "-w", "cloud", "--synchronizable"])
        XCTAssertEqual(add.status, 0, "\(add)")
        let dump = try h.run(["dump-keychain", "--json", "-d"])
        let items = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [[String: Any]] ?? []
        XCTAssertEqual(items.count, 1, dump.stdout)
        let attrs = items.first?["attributes"] as? [String: Any]
        XCTAssertEqual(attrs?["sync"] as? Int, 1)
        XCTAssertEqual(items.first?["password"] as? String, "cloud")
        // -U reaches the synchronizable item.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "sync", "-a", "app", "-w", "cloud2", "--synchronizable", "-U"]).status, 0)
        let dump2 = try h.run(["dump-keychain", "-d"])
        XCTAssertTrue(dump2.stdout.contains("data:\n\"cloud2\"\n"), dump2.stdout)
        // A non-synchronizable item with the same service and account is a different item.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "sync", "-a", "app", "-w", "local"]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "sync", "-a", "app", "-w"]).stdout, "local\n")
        // Synchronizable and ThisDeviceOnly contradict each other: errSecParam, exit 206.
        let bad = try h.run(["add-generic-password", "-s", "sync", "-a", "dev", "-w", "x", "--synchronizable",
                             "--accessible", "AfterFirstUnlockThisDeviceOnly"])
        XCTAssertEqual(bad.status, 206, "\(bad)")
        XCTAssertEqual(bad.stderr, Sentence.secretInArgv + Sentence.param)
    }

    /// find-/delete-generic-password reach a synchronizable item without --synchronizable, as
    /// macOS's `security` does (their query asks for any `sync`).
    func testFindAndDeleteReachSynchronizableItems() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "sync", "-a", "app", "-w", "cloud", "--synchronizable"]).status, 0)
        let find = try h.run(["find-generic-password", "-s", "sync", "-a", "app", "-w"])
        XCTAssertEqual(find.status, 0, "\(find)")
        XCTAssertEqual(find.stdout, "cloud\n")
        let del = try h.run(["delete-generic-password", "-s", "sync", "-a", "app"])
        XCTAssertEqual(del.status, 0, "\(del)")
        XCTAssertEqual(try h.run(["dump-keychain"]).stdout, "")
    }
}
