import Foundation
import KeychainCore
import KeychainCrypto
import KeychainTestSupport
import XCTest

/// `export`, `import` and `purge-other-device-items` end to end: the real binary and daemons,
/// two "machines" (harnesses with different device keys), real backup files.
final class BackupCLITests: XCTestCase {
    var source: CLIHarness!
    var target: CLIHarness!
    let backupPass = "backup pass phrase"
    let sourcePass = "source pass phrase"
    var backupFile: String { source.dir + "/keychain.backup" }

    static let exportable = ["ak", "ck", "dk"]
    static let deviceOnly = ["aku", "cku", "dku", "akpu"]

    override func setUpWithError() throws {
        source = try CLIHarness()
        target = try CLIHarness()
        XCTAssertNotEqual(source.environment["KEYCHAINFS_DEVICE_KEY"], target.environment["KEYCHAINFS_DEVICE_KEY"])
        try source.createVault(passphrase: sourcePass)
        try target.createVault(passphrase: "target pass phrase")
    }

    override func tearDown() {
        source?.tearDown()
        target?.tearDown()
        source = nil
        target = nil
        super.tearDown()
    }

    func ok(_ r: CLIHarness.Result, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, 0, "\(what): \(r)", file: file, line: line)
    }

    /// One generic password per protection class (account `account-<class>`), an internet
    /// password, a binary secret and a synchronizable item.
    func fillSource() throws {
        for p in Self.exportable + Self.deviceOnly {
            ok(try source.run(["add-generic-password", "-s", "backup-service", "-a", "account-\(p)", "-w", "-",
                               "-l", "label-\(p)", "-j", "a comment on \(p)", "--accessible", p],
                              input: "secret-of-\(p)"), "add \(p)")
        }
        ok(try source.run(["add-internet-password", "-s", "db.example.org", "-a", "dbadmin", "-r", "htps", "-P", "5432",
                           "-w", "-", "--accessible", "ck"], input: "internet-secret"), "add inet")
        ok(try source.run(["add-generic-password", "-s", "binary-service", "-a", "raw-bytes", "-w", "-", "--accessible", "ck"],
                          inputData: Data((0...255).map { UInt8($0) } + [7])), "add binary")
        ok(try source.run(["add-generic-password", "-s", "synced-service", "-a", "everywhere", "-w", "-", "--accessible",
                           "dk", "--synchronizable"], input: "synced-secret"), "add sync")
    }

    func export(_ file: String? = nil, _ extra: [String] = [], pass: String? = nil) throws -> CLIHarness.Result {
        try source.run(["export", "--out", file ?? backupFile, "--kdf", "interactive"] + extra, input: (pass ?? backupPass) + "\n")
    }

    func importInto(_ h: CLIHarness, _ file: String, _ extra: [String] = [], pass: String? = nil) throws -> CLIHarness.Result {
        try h.run(["import", file] + extra, input: (pass ?? backupPass) + "\n")
    }

    /// `dump-keychain -d --json`: one canonical JSON text per item, in order.
    func dump(_ h: CLIHarness, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let r = try h.run(["dump-keychain", "-d", "--json"])
        XCTAssertEqual(r.status, 0, "dump: \(r)", file: file, line: line)
        let items = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]]) ?? []
        return try items.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: .sortedKeys), as: UTF8.self) }
    }

    func itemCount(_ h: CLIHarness, _ vault: [String] = []) throws -> Int { try h.info(vault)["items"] as? Int ?? -1 }

    func testSevenClassesOutOneMachineAndIntoAnotherOnlyThoseThatMayLeave() throws {
        try fillSource()
        let export = try export()
        ok(export, "export")
        XCTAssertEqual(export.stdout, "exported 6 items to \(backupFile)\n")
        XCTAssertEqual(export.stderr, "")
        var st = stat()
        XCTAssertEqual(stat(backupFile, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: source.dir).filter { $0.hasPrefix(".keychain") }, [],
                       "no temporary file is left behind")

        // Nothing readable in the file: no service, account, label, comment, group or secret.
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: backupFile)))
        var needles = ["backup-service", "db.example.org", "dbadmin", "binary-service", "raw-bytes", "synced-service",
                       "everywhere", "internet-secret", "synced-secret", "default", "comment"]
        for p in Self.exportable + Self.deviceOnly { needles += ["account-\(p)", "label-\(p)", "secret-of-\(p)"] }
        for n in needles { XCTAssertNil(bytes.firstRange(of: Array(n.utf8)), "\(n) is readable in the backup") }
        XCTAssertNil(bytes.firstRange(of: (0...31).map { UInt8($0) }), "the binary secret is readable in the backup")

        let imported = try importInto(target, backupFile)
        ok(imported, "import")
        XCTAssertEqual(imported.stdout, "added 6, replaced 0, skipped 0\n")
        XCTAssertEqual(imported.stderr, "")

        // Exactly the ak, ck and dk items, byte for byte with their attributes, in the same order.
        let leaving = try dump(source).filter { item in Self.exportable.contains { item.contains("\"pdmn\":\"\($0)\"") } }
        XCTAssertEqual(leaving.count, 6)
        XCTAssertEqual(try dump(target), leaving)
        let binary = try target.run(["find-generic-password", "-s", "binary-service", "-a", "raw-bytes", "--json", "-w"])
        let hex = (0...255).map { String(format: "%02x", $0) }.joined() + "07"
        XCTAssertTrue(binary.stdout.contains("\"password\":{\"hex\":\"\(hex)\"}"), binary.stdout)
        for p in Self.exportable {
            let r = try target.run(["find-generic-password", "-s", "backup-service", "-a", "account-\(p)", "-w"])
            XCTAssertEqual(r.stdout, "secret-of-\(p)\n", "\(p): \(r)")
        }
        for p in Self.deviceOnly {
            let r = try target.run(["find-generic-password", "-s", "backup-service", "-a", "account-\(p)", "-w"])
            XCTAssertEqual(r.status, 44, "\(p): \(r)")
            XCTAssertEqual(r.stderr, Sentence.notFound)
        }
        let info = try target.info()
        XCTAssertEqual(info["items"] as? Int, 6)
        XCTAssertEqual(info["other-device"] as? Int, 0)
    }

    func testWrongPassphraseOrAnyDamageImportsNothingAndSaysWhy() throws {
        try fillSource()
        ok(try export(), "export")
        let wrong = try importInto(target, backupFile, pass: "not the backup pass")
        XCTAssertEqual(wrong.status, 51, "\(wrong)")
        XCTAssertEqual(wrong.stdout, "")
        XCTAssertEqual(wrong.stderr, Sentence.authFailed + "keychainfs: nothing was imported: the backup passphrase is wrong\n")
        XCTAssertEqual(try itemCount(target), 0)

        let good = Array(try Data(contentsOf: URL(fileURLWithPath: backupFile)))
        let damagedFile = target.dir + "/damaged.backup"
        let sentence = "keychainfs: Unable to decode the provided data.\n"
        // One byte in each field: magic, version, header length, KDF, salt, chunk size, key check,
        // checksum; then the first chunk's length, nonce, ciphertext and tag, and the last byte.
        let header = [0, 7, 9, 11, 12, 20, 30, 46, 60, 88, 100, 120]
        let chunks = [121, 124, 130, 160, 300, good.count / 2, good.count - 17, good.count - 1]
        for i in header + chunks {
            var damaged = good
            damaged[i] ^= 0x20
            try Data(damaged).write(to: URL(fileURLWithPath: damagedFile))
            let r = try importInto(target, damagedFile)
            XCTAssertEqual(r.status, 93, "byte \(i): \(r)")
            XCTAssertEqual(r.stdout, "", "byte \(i)")
            let why = i < 121 ? "\(damagedFile) is not a keychainfs backup (or it is damaged), nor a key or certificate file"
                              : "the backup is damaged, truncated or reordered"
            XCTAssertEqual(r.stderr, sentence + "keychainfs: nothing was imported: \(why)\n", "byte \(i)")
        }
        for (name, damaged) in [("truncated", Array(good.dropLast(100))), ("extended", good + [0])] {
            try Data(damaged).write(to: URL(fileURLWithPath: damagedFile))
            let r = try importInto(target, damagedFile)
            XCTAssertEqual(r.status, 93, "\(name): \(r)")
            XCTAssertEqual(r.stderr, sentence + "keychainfs: nothing was imported: the backup is damaged, truncated or reordered\n")
        }
        XCTAssertEqual(try itemCount(target), 0)
        ok(try importInto(target, backupFile), "the undamaged file still imports")
        XCTAssertEqual(try itemCount(target), 6)
    }

    func testABackupFromANewerFormatIsRefusedClearly() throws {
        ok(try source.run(["add-generic-password", "-s", "svc", "-a", "acct", "-w", "x"]), "add")
        ok(try export(), "export")
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: backupFile)))
        bytes[9] = 3   // format version 3, checksum recomputed: what a newer keychainfs would write
        bytes.replaceSubrange(89..<121, with: KeyedHash.hash(Array(bytes[0..<89]), key: nil, length: 32))
        try Data(bytes).write(to: URL(fileURLWithPath: backupFile))
        let r = try importInto(target, backupFile)
        XCTAssertEqual(r.status, 49, "\(r)")
        XCTAssertEqual(r.stdout, "")
        XCTAssertEqual(r.stderr, "keychainfs: The backup uses format version 3; this keychainfs reads backup versions up to 2.\n")
        XCTAssertEqual(try itemCount(target), 0)
    }

    func testAccessGroupsComeWithTheirItemsOrAreNamed() throws {
        ok(try source.run(["group", "add", "team", "--mode", "0440", "--may-lock"]), "group add")
        ok(try source.run(["group", "add", "unused"]), "group add unused")
        ok(try source.run(["add-generic-password", "-s", "teamsvc", "-a", "deploy", "-w", "team-secret",
                           "--access-group", "team"]), "add")
        ok(try export(), "export")

        let skipped = try importInto(target, backupFile, ["--groups", "skip"])
        ok(skipped, "import --groups skip")
        XCTAssertEqual(skipped.stdout, "added 1, replaced 0, skipped 0\n")
        XCTAssertTrue(skipped.stderr.contains("groups this vault does not define") && skipped.stderr.contains(": team"),
                      skipped.stderr)
        XCTAssertEqual(try target.run(["find-generic-password", "-s", "teamsvc", "-w"]).status, 44, "no group, no reader")
        XCTAssertFalse(try target.run(["group", "list"]).stdout.contains("team"), "skip creates no group")

        let kept = try importInto(target, backupFile, ["--replace"])
        ok(kept, "import (groups kept by default)")
        XCTAssertEqual(kept.stdout, "added 0, replaced 1, skipped 0\ncreated groups: team\n")
        XCTAssertEqual(kept.stderr, "")
        XCTAssertEqual(try target.run(["find-generic-password", "-s", "teamsvc", "-w"]).stdout, "team-secret\n")
        let listed = try target.run(["group", "list"]).stdout
        let team = listed.split(separator: "\n").first { $0.hasPrefix("team ") }.map(String.init) ?? ""
        XCTAssertTrue(team.contains("mode=0440") && team.contains("may-lock"), listed)
        XCTAssertFalse(listed.contains("unused"), "a group without exported items stays behind: \(listed)")

        // A group this vault defines keeps its definition here.
        ok(try target.run(["group", "set", "team", "--mode", "0400"]), "group set")
        ok(try importInto(target, backupFile, ["--replace"]), "import again")
        XCTAssertTrue(try target.run(["group", "list"]).stdout.split(separator: "\n").contains { $0.hasPrefix("team ") && $0.contains("mode=0400") })
        XCTAssertEqual(try importInto(target, backupFile, ["--groups", "all"]).status, 2)
    }

    func testKeepNewerByDefaultAndReplaceOnRequest() throws {
        func add(_ h: CLIHarness, _ account: String, _ secret: String) throws {
            ok(try h.run(["add-generic-password", "-s", "svc", "-a", account, "-w", "-", "-U"], input: secret), "add \(account)")
        }
        func secret(_ account: String) throws -> String {
            try target.run(["find-generic-password", "-s", "svc", "-a", account, "-w"]).stdout
        }
        try add(source, "x", "x-1")
        try add(source, "y", "y-1")
        let first = source.dir + "/first.backup", second = source.dir + "/second.backup"
        ok(try export(first), "export 1")
        XCTAssertEqual(try importInto(target, first).stdout, "added 2, replaced 0, skipped 0\n")
        usleep(20_000)
        try add(target, "x", "x-changed-on-target")
        usleep(20_000)
        try add(source, "y", "y-2")
        ok(try export(second), "export 2")

        let byDefault = try importInto(target, second)
        ok(byDefault, "import 2")
        XCTAssertEqual(byDefault.stdout, "added 0, replaced 1, skipped 1\n")
        XCTAssertEqual(try secret("x"), "x-changed-on-target\n")
        XCTAssertEqual(try secret("y"), "y-2\n")

        let replace = try importInto(target, first, ["--replace"])
        XCTAssertEqual(replace.stdout, "added 0, replaced 2, skipped 0\n", "\(replace)")
        XCTAssertEqual(try secret("x"), "x-1\n")
        XCTAssertEqual(try secret("y"), "y-1\n")

        let keepNewer = try importInto(target, second, ["--keep-newer"])
        XCTAssertEqual(keepNewer.stdout, "added 0, replaced 1, skipped 1\n", "\(keepNewer)")
        XCTAssertEqual(try secret("y"), "y-2\n")
        XCTAssertEqual(try itemCount(target), 2)

        let both = try importInto(target, first, ["--replace", "--keep-newer"])
        XCTAssertEqual(both.status, 2, "\(both)")
        XCTAssertTrue(both.stderr.hasPrefix("keychainfs: give --replace or --keep-newer, not both\n"), both.stderr)
    }

    func testSynchronizableOnly() throws {
        try fillSource()
        let r = try export(nil, ["--synchronizable-only"])
        XCTAssertEqual(r.stdout, "exported 1 items to \(backupFile)\n", "\(r)")
        XCTAssertEqual(try importInto(target, backupFile).stdout, "added 1, replaced 0, skipped 0\n")
        XCTAssertEqual(try target.run(["find-generic-password", "-s", "synced-service", "-w"]).stdout, "synced-secret\n")
    }

    func testExportNeedsAnUnlockedVaultAndAnAdministrator() throws {
        try fillSource()
        ok(try source.run(["lock-keychain"]), "lock")
        let locked = try export()
        XCTAssertEqual(locked.status, 36, "\(locked)")
        XCTAssertEqual(locked.stderr, Sentence.interactionNotAllowed + Sentence.vaultLocked)
        XCTAssertFalse(FileManager.default.fileExists(atPath: backupFile))
        ok(try source.run(["unlock-keychain"], input: sourcePass + "\n"), "unlock")
        ok(try export(), "export")

        guard getuid() == 0, let nobody = getpwnam("nobody") else { return }
        let asNobody = ["/usr/bin/setpriv", "--reuid", String(nobody.pointee.pw_uid), "--regid",
                        String(nobody.pointee.pw_gid), "--clear-groups"]
        chmod(source.dir, 0o755)
        let outsider = try source.run(["export", "--out", "/tmp/kcfs-nobody-\(getpid()).backup"], input: backupPass + "\n",
                                      prefix: asNobody)
        XCTAssertEqual(outsider.status, 51, "\(outsider)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/tmp/kcfs-nobody-\(getpid()).backup"))
        chmod(backupFile, 0o644)
        let intruder = try target.run(["import", backupFile], input: backupPass + "\n", prefix: asNobody)
        XCTAssertEqual(intruder.status, 51, "\(intruder)")
        XCTAssertEqual(intruder.stderr, Sentence.authFailed + "keychainfs: nothing was imported: only root and the vault's owner may import\n")
        XCTAssertEqual(try itemCount(target), 0)
    }

    func testAVaultFileMovedToAnotherMachineCanPurgeItsDeviceBoundItems() throws {
        try fillSource()
        ok(try source.run(["stop"]), "stop")
        let moved = target.dir + "/moved.vault"
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source.vault + suffix) {
            try FileManager.default.copyItem(atPath: source.vault + suffix, toPath: moved + suffix)
        }
        XCTAssertEqual(try target.info([moved])["other-device"] as? Int, 4)
        XCTAssertTrue(try target.run(["show-keychain-info", moved]).stdout
            .contains("bound to another device: 4 (never readable here)\n"))

        let unconfirmed = try target.run(["purge-other-device-items", moved])
        XCTAssertEqual(unconfirmed.status, 2, "\(unconfirmed)")
        XCTAssertEqual(try itemCount(target, [moved]), 10)

        let purge = try target.run(["purge-other-device-items", "--yes", moved])
        ok(purge, "purge")
        XCTAssertEqual(purge.stdout, "deleted 4 item(s) bound to another device\n")
        let info = try target.info([moved])
        XCTAssertEqual(info["other-device"] as? Int, 0)
        XCTAssertEqual(info["items"] as? Int, 6)
        ok(try target.run(["unlock-keychain", moved], input: sourcePass + "\n"), "unlock the moved vault")
        for p in Self.exportable {
            let r = try target.run(["find-generic-password", "-s", "backup-service", "-a", "account-\(p)", "-w", moved])
            XCTAssertEqual(r.stdout, "secret-of-\(p)\n", "\(p): \(r)")
        }
        XCTAssertEqual(try target.run(["purge-other-device-items", "--yes", moved]).stdout, "no items bound to another device\n")
        // On the machine that made it, nothing is bound elsewhere and nothing is deleted.
        XCTAssertEqual(try source.run(["purge-other-device-items", "--yes"]).stdout, "no items bound to another device\n")
        XCTAssertEqual(try itemCount(source), 10)
    }

    func testRemovingThePassphraseDeletesPasscodeItemsAfterConfirmation() throws {
        try fillSource()
        let unconfirmed = try source.run(["set-keychain-password", "--remove-passphrase"], input: sourcePass + "\n")
        XCTAssertEqual(unconfirmed.status, 2, "\(unconfirmed)")
        XCTAssertEqual(try source.run(["find-generic-password", "-s", "backup-service", "-a", "account-akpu", "-w"]).stdout,
                       "secret-of-akpu\n")
        let removed = try source.run(["set-keychain-password", "--remove-passphrase", "--yes"], input: sourcePass + "\n")
        ok(removed, "remove passphrase")
        XCTAssertEqual(removed.stderr, "deleted 1 WhenPasscodeSetThisDeviceOnly item(s)\n")
        let gone = try source.run(["find-generic-password", "-s", "backup-service", "-a", "account-akpu", "-w"])
        XCTAssertEqual(gone.status, 44, "\(gone)")
        let info = try source.info()
        XCTAssertEqual(info["passphrase"] as? Bool, false)
        XCTAssertEqual(info["items"] as? Int, 9)
        XCTAssertEqual(try source.run(["find-generic-password", "-s", "backup-service", "-a", "account-aku", "-w"]).stdout,
                       "secret-of-aku\n")
    }

    func testABackupLargerThanOneFrameTravelsInPieces() throws {
        // 20 secrets of 1 MiB: the backup is over 16 MiB, so it crosses the socket in pieces.
        for i in 0..<20 {
            let secret = String(repeating: "item \(i) ", count: (1 << 20) / "item \(i) ".utf8.count)
            ok(try source.run(["add-generic-password", "-s", "big", "-a", "item-\(i)", "-w", "-"], input: secret), "add \(i)")
        }
        let export = try export()
        ok(export, "export")
        var st = stat()
        XCTAssertEqual(stat(backupFile, &st), 0)
        XCTAssertGreaterThan(Int(st.st_size), 20 << 20)
        let imported = try importInto(target, backupFile)
        ok(imported, "import")
        XCTAssertEqual(imported.stdout, "added 20, replaced 0, skipped 0\n")
        for i in [0, 19] {
            let r = try target.run(["find-generic-password", "-s", "big", "-a", "item-\(i)", "-w"])
            XCTAssertEqual(r.stdout, String(repeating: "item \(i) ", count: (1 << 20) / "item \(i) ".utf8.count) + "\n")
        }
    }

    func testPresenceGatedSecretsLeaveOnlyWithTheApprovalProgramsConsent() throws {
        ok(try source.run(["add-generic-password", "-s", "gated-service", "-a", "gated-account", "-w", "-",
                           "--access-control", "userPresence"], input: "gated-secret"), "add gated")
        ok(try source.run(["add-generic-password", "-s", "plain-service", "-a", "plain", "-w", "plain-secret"]), "add")
        let none = try export()
        XCTAssertEqual(none.status, 36, "no approval program: \(none)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: backupFile))
        ok(try source.run(["set-keychain-settings", "--approval-program", "/bin/false"]), "settings")
        XCTAssertEqual(try export().status, 128, "denied: errSecUserCanceled")
        XCTAssertFalse(FileManager.default.fileExists(atPath: backupFile))
        ok(try source.run(["set-keychain-settings", "--approval-program", "/bin/true"]), "settings")
        let approved = try export()
        XCTAssertEqual(approved.stdout, "exported 2 items to \(backupFile)\n", "\(approved)")
        XCTAssertEqual(try importInto(target, backupFile).stdout, "added 2, replaced 0, skipped 0\n")
        // Still gated where it arrives: no approval program there.
        let gated = try target.run(["find-generic-password", "-s", "gated-service", "-w"])
        XCTAssertEqual(gated.status, 36, "\(gated)")
        ok(try target.run(["set-keychain-settings", "--approval-program", "/bin/true"]), "target settings")
        XCTAssertEqual(try target.run(["find-generic-password", "-s", "gated-service", "-w"]).stdout, "gated-secret\n")
        let audit = try source.run(["audit"]).stdout
        XCTAssertTrue(audit.contains("\tpresence-approved\t"), audit)
        XCTAssertTrue(audit.contains("\texport\titems=2\t"), audit)
    }

    /// 100,000 items through the daemons and the CLI. Runs only with KEYCHAINFS_BACKUP_100K set.
    func testHundredThousandItemsThroughTheDaemon() throws {
        guard ProcessInfo.processInfo.environment["KEYCHAINFS_BACKUP_100K"] != nil else {
            throw XCTSkip("set KEYCHAINFS_BACKUP_100K=1 to run the 100,000-item round trip through the daemon")
        }
        let n = 100_000
        let big = source.dir + "/big.vault"
        do {
            // Filled in process (100,000 CLI adds would take long), with the harness's device key.
            let device = try DeviceKey.loadOrCreate(at: source.environment["KEYCHAINFS_DEVICE_KEY"]!)
            let vault = try Vault.create(at: big, passphrase: SecureBytes(copying: Array(sourcePass.utf8)),
                                         kdf: .interactive, deviceKey: device)
            for start in stride(from: 0, to: n, by: 10_000) {
                try vault.addAll((start..<start + 10_000).map { i in
                    (["class": "genp", "svce": .string("service-\(i % 100)"), "acct": .string("account-\(i)"),
                      "pdmn": i % 3 == 0 ? "ck" : "ak"], try SecureBytes(copying: Array("secret number \(i)".utf8)))
                }, accessGroups: ["default"])
            }
        }
        ok(try source.run(["unlock-keychain", big], input: sourcePass + "\n"), "unlock")
        let export = try source.run(["export", "--out", backupFile, big], input: backupPass + "\n", timeout: 600)
        ok(export, "export")
        XCTAssertEqual(export.stdout, "exported \(n) items to \(backupFile)\n")
        let imported = try target.run(["import", backupFile], input: backupPass + "\n", timeout: 600)
        ok(imported, "import")
        XCTAssertEqual(imported.stdout, "added \(n), replaced 0, skipped 0\n")
        var st = stat()
        _ = stat(backupFile, &st)
        print(String(format: "backup 100k through the daemon: export %.2f s, import %.2f s, %d bytes (Argon2id moderate)",
                     export.elapsed, imported.elapsed, Int(st.st_size)))
        XCTAssertEqual(try itemCount(target), n)
        XCTAssertEqual(try target.run(["find-generic-password", "-s", "service-42", "-a", "account-99942", "-w"]).stdout,
                       "secret number 99942\n")
    }

    func testUsage() throws {
        let noOut = try source.run(["export"], input: backupPass + "\n")
        XCTAssertEqual(noOut.status, 2, "\(noOut)")
        XCTAssertTrue(noOut.stderr.hasPrefix("keychainfs: export needs --out FILE\n"), noOut.stderr)
        let noFile = try source.run(["import"])
        XCTAssertEqual(noFile.status, 2, "\(noFile)")
        let missing = try source.run(["import", source.dir + "/nothing-here"], input: backupPass + "\n")
        XCTAssertEqual(missing.status, 220, "\(missing)")
        XCTAssertEqual(missing.stderr, "keychainfs: cannot read \(source.dir)/nothing-here: No such file or directory\n")
        let emptyPass = try source.run(["export", "--out", backupFile], input: "\n")
        XCTAssertEqual(emptyPass.status, 2, "\(emptyPass)")
        XCTAssertTrue(try source.run(["help"]).stdout.contains("purge-other-device-items"))
    }
}
