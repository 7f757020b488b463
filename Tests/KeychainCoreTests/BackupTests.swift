import Foundation
import KeychainCore
import KeychainCrypto
import XCTest

/// Backups (docs/backup-format.md) at the engine level: what goes in, what comes back, and
/// that any damage, reordering or wrong passphrase imports nothing.
final class BackupTests: XCTestCase {
    var scratch: Scratch!

    // XCTest keeps every test case alive to the end of the run: the scratch directory goes now.
    override func tearDown() { scratch = nil }
    let backupPass = "backup pass phrase"

    override func setUpWithError() throws { scratch = try Scratch() }

    func export(_ vault: Vault, chunkSize: Int = BackupFormat.defaultChunkSize, synchronizableOnly: Bool = false,
                approved: Set<PersistentRef> = []) throws -> BackupExport {
        try vault.exportBackup(passphrase: secret(backupPass), kdf: .minimum, synchronizableOnly: synchronizableOnly,
                               approved: approved, chunkSize: chunkSize)
    }

    /// Every item of every class, attributes and secret, in insertion order.
    func everything(_ vault: Vault) throws -> [(Attributes, [UInt8])] {
        var out: [(Attributes, [UInt8])] = []
        for c in ItemClass.allCases {
            let r: QueryResult
            do {
                r = try vault.copyMatching(["class": .string(c.rawValue), "sync": "syna", "m_Limit": "m_LimitAll",
                                            "r_Attributes": true, "r_Data": true], accessGroups: groups)
            } catch KeychainStatus.itemNotFound { continue }
            for v in r.array ?? [] {
                guard let item = v.item else { continue }
                out.append((item.attributes, item.secret?.withUnsafeBytes { Array($0) } ?? []))
            }
        }
        return out
    }

    /// A vault with items of all four classes and all seven protection classes, with every
    /// kind of attribute value, an empty secret and a binary one.
    func richVault(_ name: String = "source.vault", device: String = "source") throws -> Vault {
        let v = try scratch.makeVault(name, device: device)
        try v.add(["class": "genp", "svce": "mail", "acct": "ann", "labl": "Mail", "icmt": "comment", "desc": "kind",
                   "gena": .data([0, 1, 2, 255]), "invi": true, "crtr": 1_234, "type": "abcd", "pdmn": "ak"],
                  secret: secret("mail-secret"), accessGroups: groups)
        try v.add(["class": "inet", "srvr": "db.example", "acct": "admin", "ptcl": "htps", "port": 5432, "path": "/x",
                   "sdmn": "realm", "atyp": "dflt", "pdmn": "ck", "agrp": "app.shared"],
                  secret: SecureBytes(copying: (0...255).map { UInt8($0) }), accessGroups: groups)
        try v.add(["class": "cert", "ctyp": 3, "issr": .data([9, 8, 7]), "slnr": .data([1, 2]), "subj": .data([5]),
                   "labl": "a cert", "pdmn": "dk"], secret: secret("cert-bytes"), accessGroups: groups)
        try v.add(["class": "keys", "kcls": 1, "klbl": .data([4, 4]), "atag": "tag", "bsiz": 256, "esiz": 256,
                   "sign": true, "pdmn": "ak", "accc": "ak;1073741824"], secret: secret("key-bytes"), accessGroups: groups)
        try v.add(["class": "genp", "svce": "empty", "acct": "e", "pdmn": "ck"], secret: SecureBytes(count: 0),
                  accessGroups: groups)
        try v.add(["class": "genp", "svce": "sync", "acct": "s", "sync": true, "pdmn": "dk"], secret: secret("synced"),
                  accessGroups: groups)
        for p in ProtectionClass.allCases {
            try v.addPassword(service: "p", account: p.rawValue, secret: "secret-\(p.rawValue)", ["pdmn": .string(p.rawValue)])
        }
        return v
    }

    func testRoundTripBringsExactlyTheClassesThatMayLeaveByteForByte() throws {
        let source = try richVault()
        let backup = try export(source)
        XCTAssertEqual(backup.itemCount, 9)
        XCTAssertEqual(backup.damagedCount, 0)

        let target = try scratch.makeVault("target.vault", passphrase: "another", device: "target")
        XCTAssertEqual(try target.importBackup(backup.bytes, passphrase: secret(backupPass)).counted,
                       ImportSummary(added: 9, replaced: 0, skipped: 0))

        let leaving = try everything(source).filter { a, _ in
            guard let p = a["pdmn"]?.stringValue.flatMap(ProtectionClass.init(rawValue:)) else { return false }
            return !p.isThisDeviceOnly
        }
        let arrived = try everything(target)
        XCTAssertEqual(arrived.count, 9)
        XCTAssertEqual(arrived.map(\.0), leaving.map(\.0), "every attribute, dates included, in the same order")
        XCTAssertEqual(arrived.map(\.1), leaving.map(\.1), "every secret, byte for byte")
        // The store's own secret date travels too.
        let sourceFiles = try source.fileEntries(accessGroups: groups).filter { !$0.protection.isThisDeviceOnly }
        XCTAssertEqual(try target.fileEntries(accessGroups: groups).map(\.attributes), sourceFiles.map(\.attributes))
        for p in ProtectionClass.allCases {
            if p.isThisDeviceOnly {
                XCTAssertStatus(.itemNotFound, try target.password(service: "p", account: p.rawValue))
            } else {
                XCTAssertEqual(try target.password(service: "p", account: p.rawValue), "secret-\(p.rawValue)")
            }
        }
        XCTAssertEqual(try target.info().itemsByProtection.filter { $0.key.isThisDeviceOnly }.count, 0)
    }

    func testTheBackupHoldsNoNameOrSecretInTheClear() throws {
        let backup = try export(try richVault()).bytes
        for needle in ["mail-secret", "mail", "ann", "db.example", "admin", "secret-ak", "secret-ck", "app.default",
                       "app.shared", "Mail", "comment", "cert-bytes", "tag", "synced", "genp", "svce", "acct", "agrp"] {
            XCTAssertNil(backup.firstRange(of: Array(needle.utf8)), "\(needle) is in the clear")
        }
    }

    func testWrongPassphraseIsAuthFailedAndImportsNothing() throws {
        let backup = try export(try richVault()).bytes
        let target = try scratch.makeVault("target.vault", device: "target")
        XCTAssertStatus(.authFailed, try target.importBackup(backup, passphrase: secret("not it")))
        XCTAssertEqual(try target.info().itemCount, 0)
    }

    func testEveryFlippedBitOfEveryByteIsDecodeAndImportsNothing() throws {
        let source = try scratch.makeVault(device: "source")
        try source.addPassword(service: "a", account: "b", secret: "one", ["pdmn": "ck"])
        try source.addPassword(service: "c", account: "d", secret: "two")
        let backup = try export(source, chunkSize: 64).bytes
        let target = try scratch.makeVault("target.vault", device: "target")
        for i in backup.indices {
            for bit in 0..<8 {
                var damaged = backup
                damaged[i] ^= UInt8(1 << bit)
                XCTAssertStatus(.decode, try target.importBackup(damaged, passphrase: secret(backupPass)),
                                file: #filePath, line: #line)
            }
        }
        XCTAssertEqual(try target.info().itemCount, 0)
        XCTAssertEqual(try target.importBackup(backup, passphrase: secret(backupPass)).added, 2)
    }

    /// Chunk boundaries of a backup: (offset, length) of each `u32 length || box`.
    func chunks(_ bytes: [UInt8]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var i = 121
        while i < bytes.count {
            let n = bytes[i..<i + 4].reduce(0) { $0 << 8 | Int($1) }
            out.append(i..<i + 4 + n)
            i += 4 + n
        }
        return out
    }

    func testTruncatedReorderedRepeatedOrExtendedChunksAreDecode() throws {
        let source = try richVault()
        let backup = try export(source, chunkSize: 100).bytes
        let parts = chunks(backup)
        XCTAssertGreaterThan(parts.count, 5)
        let header = Array(backup[0..<121])
        func file(_ order: [Int]) -> [UInt8] { header + order.flatMap { backup[parts[$0]] } }
        let all = Array(parts.indices)
        XCTAssertEqual(file(all), backup)
        var swapped = all
        swapped.swapAt(1, 2)
        let cases: [String: [UInt8]] = [
            "last chunk dropped": file(Array(all.dropLast())),
            "middle chunk dropped": file(all.filter { $0 != 2 }),
            "chunks swapped": file(swapped),
            "chunk repeated": file([0, 1, 1] + all.dropFirst(2)),
            "final chunk repeated": file(all + [all.last!]),
            "header only": header,
            "one byte short": Array(backup.dropLast()),
            "one byte more": backup + [0],
            "empty": [],
        ]
        let target = try scratch.makeVault("target.vault", device: "target")
        for (name, bytes) in cases {
            XCTAssertThrowsError(try target.importBackup(bytes, passphrase: secret(backupPass)), name) { error in
                XCTAssertEqual(error as? KeychainStatus, .decode, "\(name): \(error)")
            }
        }
        // A final chunk from another backup under the same passphrase does not fit either.
        let other = try export(source, chunkSize: 100).bytes
        let otherParts = chunks(other)
        XCTAssertStatus(.decode, try target.importBackup(file(Array(all.dropLast())) + other[otherParts.last!],
                                                         passphrase: secret(backupPass)))
        XCTAssertEqual(try target.info().itemCount, 0)
    }

    func testNewerFormatIsRefusedNamingBothVersions() throws {
        var backup = try export(try richVault()).bytes
        backup[9] = 3   // version 3, with a correct checksum: a real newer file
        backup.replaceSubrange(89..<121, with: KeyedHash.hash(Array(backup[0..<89]), key: nil, length: 32))
        let target = try scratch.makeVault("target.vault", device: "target")
        XCTAssertThrowsError(try target.importBackup(backup, passphrase: secret(backupPass))) { error in
            XCTAssertEqual(error as? BackupFileError, .newerFormat(found: 3, supported: 2))
            XCTAssertEqual((error as? BackupFileError)?.status, .invalidKeychain)
            XCTAssertEqual("\(error)", "The backup uses format version 3; this keychainfs reads backup versions up to 2.")
        }
        XCTAssertThrowsError(try BackupFormat.version(of: backup)) { error in
            XCTAssertEqual(error as? BackupFileError, .newerFormat(found: 3, supported: 2))
        }
        XCTAssertEqual(try target.info().itemCount, 0)
    }

    func testHeaderLayout() throws {
        let backup = try export(try scratch.makeVault(device: "source")).bytes
        XCTAssertEqual(Array(backup[0..<8]), Array("KCFSBKUP".utf8))
        XCTAssertEqual(Array(backup[8..<12]), [0, 2, 0, 77])
        XCTAssertEqual(backup[12], 1)   // Argon2id
        let minimum = KDFParameters.minimum
        XCTAssertEqual(backup[13..<21].reduce(0) { $0 << 8 | UInt64($1) }, minimum.opsLimit)
        XCTAssertEqual(backup[21..<29].reduce(0) { $0 << 8 | UInt64($1) }, minimum.memLimit)
        XCTAssertEqual(backup[45..<49].reduce(0) { $0 << 8 | Int($1) }, BackupFormat.defaultChunkSize)
        XCTAssertEqual(Array(backup[89..<121]), KeyedHash.hash(Array(backup[0..<89]), key: nil, length: 32))
        // An empty vault: one final chunk holding the end record (kind 0, count 0): 9 bytes.
        XCTAssertEqual(chunks(backup).map(\.count), [4 + 9 + 40])
        XCTAssertEqual(try BackupFormat.version(of: backup), 2)
    }

    func testGroupDefinitionsOfExportedItemsTravelAndArriveInTheImportsTransaction() throws {
        let source = try scratch.makeVault(device: "source")
        try source.addPassword(service: "svc", account: "a", secret: "in-team", ["agrp": "team"], groups: ["team"])
        let team: Fields = ["name": "team", "owner": .number(1000), "gid": .number(1000), "mode": .number(0o440),
                                "exe": "", "lock": .number(1)]
        let unused: Fields = ["name": "unused", "owner": .number(0), "gid": .number(0), "mode": .number(0o400)]
        let backup = try source.exportBackup(passphrase: secret(backupPass), kdf: .minimum, groups: [team, unused]).bytes
        let target = try scratch.makeVault("target.vault", device: "target")
        var seen: [Fields] = []
        let summary = try target.importBackup(backup, passphrase: secret(backupPass)) { groups in
            seen = groups
            return ("test-groups", try secret("stored with the items"))
        }
        XCTAssertEqual(seen, [team], "only the groups of exported items")
        XCTAssertEqual(summary.groups, [team])
        XCTAssertEqual(summary.itemGroups, ["team"])
        XCTAssertEqual(try target.sealedSetting("test-groups")?.string, "stored with the items")

        // A failure while storing the groups imports nothing: items and groups arrive together.
        let other = try scratch.makeVault("other.vault", device: "other")
        XCTAssertStatus(.decode, try other.importBackup(backup, passphrase: secret(backupPass)) { _ in throw KeychainStatus.decode })
        XCTAssertEqual(try other.info().itemCount, 0)
        XCTAssertNil(try other.sealedSetting("test-groups"))
    }

    func testKeepNewerAndReplace() throws {
        let source = try scratch.makeVault(device: "source")
        try source.addPassword(service: "s", account: "x", secret: "x-from-backup")
        try source.addPassword(service: "s", account: "y", secret: "y-from-backup")
        let backup = try export(source).bytes
        let target = try scratch.makeVault("target.vault", device: "target")
        XCTAssertEqual(try target.importBackup(backup, passphrase: secret(backupPass)).counted, ImportSummary(added: 2))
        // The same backup again: equal dates, the vault's copies stay.
        XCTAssertEqual(try target.importBackup(backup, passphrase: secret(backupPass)).counted, ImportSummary(skipped: 2))
        usleep(10_000)
        try target.update(["class": "genp", "svce": "s", "acct": "x"], changes: [:], secret: secret("x-changed-here"),
                          accessGroups: groups)
        usleep(10_000)
        try source.update(["class": "genp", "svce": "s", "acct": "y"], changes: [:], secret: secret("y-changed-there"),
                          accessGroups: groups)
        let newer = try export(source).bytes
        XCTAssertEqual(try target.importBackup(newer, passphrase: secret(backupPass)).counted, ImportSummary(replaced: 1, skipped: 1))
        XCTAssertEqual(try target.password(service: "s", account: "x"), "x-changed-here")
        XCTAssertEqual(try target.password(service: "s", account: "y"), "y-changed-there")
        XCTAssertEqual(try target.importBackup(backup, passphrase: secret(backupPass), policy: .replace).counted,
                       ImportSummary(replaced: 2))
        XCTAssertEqual(try target.password(service: "s", account: "x"), "x-from-backup")
        XCTAssertEqual(try target.password(service: "s", account: "y"), "y-from-backup")
        XCTAssertEqual(try target.info().itemCount, 2)
    }

    func testAnItemBoundToAnotherDeviceCountsAsOlderAndALockedOneStopsTheImport() throws {
        // A vault file made elsewhere holds an aku item with the primary key of a backed-up ak item.
        let elsewhere = try scratch.makeVault("moved.vault", device: "elsewhere")
        try elsewhere.addPassword(service: "s", account: "x", secret: "unreadable here", ["pdmn": "aku"])
        usleep(10_000)
        let source = try scratch.makeVault(device: "source")
        try source.addPassword(service: "s", account: "x", secret: "restored", ["pdmn": "ak"])
        let backup = try export(source).bytes

        let moved = try Vault.open(at: scratch.path("moved.vault"), deviceKey: try scratch.deviceKey("source"))
        try moved.unlock(passphrase: secret("correct horse"))
        XCTAssertStatus(.decode, try moved.password(service: "s", account: "x"))
        // Older by date too, but unreadable wins regardless: make the vault's item the newer one.
        XCTAssertEqual(try moved.importBackup(backup, passphrase: secret(backupPass)).counted, ImportSummary(replaced: 1))
        XCTAssertEqual(try moved.password(service: "s", account: "x"), "restored")

        // A collision with an item whose class key is only locked cannot be decided: nothing changes.
        let target = try scratch.makeVault("target.vault", device: "target")
        try target.addPassword(service: "s", account: "x", secret: "locked away", ["pdmn": "ak"])
        try source.update(["class": "genp", "svce": "s", "acct": "x"], changes: ["pdmn": "ck"], accessGroups: groups)
        try source.addPassword(service: "s", account: "z", secret: "z", ["pdmn": "ck"])
        let ckOnly = try export(source).bytes
        target.lock()
        XCTAssertStatus(.interactionNotAllowed, try target.importBackup(ckOnly, passphrase: secret(backupPass)))
        XCTAssertEqual(try target.info().itemCount, 1)
        XCTAssertEqual(try target.importBackup(ckOnly, passphrase: secret(backupPass), policy: .replace).counted,
                       ImportSummary(added: 1, replaced: 1))
    }

    func testExportNeedsTheClassKeysAndApprovalForPresenceGatedItems() throws {
        let source = try scratch.makeVault(device: "source")
        try source.addPassword(service: "s", account: "plain", secret: "p")
        source.lock()
        XCTAssertStatus(.interactionNotAllowed, try export(source))
        try source.unlock(passphrase: secret("correct horse"))
        try source.add(["class": "genp", "svce": "s", "acct": "gated", "accc": "ak;1"], secret: secret("g"),
                       accessGroups: groups)
        var needed: [PersistentRef] = []
        XCTAssertThrowsError(try export(source)) { error in
            needed = (error as? BackupApprovalNeeded)?.items.map(\.ref) ?? []
            XCTAssertEqual((error as? BackupApprovalNeeded)?.items.first?.attributes["acct"], "gated")
        }
        XCTAssertEqual(needed.count, 1)
        let backup = try export(source, approved: Set(needed))
        XCTAssertEqual(backup.itemCount, 2)
        let target = try scratch.makeVault("target.vault", device: "target")
        XCTAssertEqual(try target.importBackup(backup.bytes, passphrase: secret(backupPass)).added, 2)
        let gated = try target.copyMatching(["class": "genp", "acct": "gated", "r_Attributes": true], accessGroups: groups)
        XCTAssertEqual(gated.value?.item?.attributes["accc"], "ak;1")
        XCTAssertStatus(.interactionNotAllowed, try target.password(service: "s", account: "gated"))
    }

    func testSynchronizableOnly() throws {
        let backup = try export(try richVault(), synchronizableOnly: true)
        XCTAssertEqual(backup.itemCount, 1)
        let target = try scratch.makeVault("target.vault", device: "target")
        XCTAssertEqual(try target.importBackup(backup.bytes, passphrase: secret(backupPass)).added, 1)
        XCTAssertEqual(try everything(target).map { $0.0["svce"] }, ["sync"])
    }

    func testPurgeDeletesOnlyThisDeviceOnlyItemsAndOnlyOnAnotherMachine() throws {
        _ = try richVault()
        let home = try Vault.open(at: scratch.path("source.vault"), deviceKey: try scratch.deviceKey("source"))
        XCTAssertEqual(try home.purgeOtherDeviceItems(), 0)
        XCTAssertEqual(try home.info().itemCount, 13)
        let elsewhere = try Vault.open(at: scratch.path("source.vault"), deviceKey: try scratch.deviceKey("elsewhere"))
        XCTAssertEqual(try elsewhere.info().itemsBoundToOtherDevice, 4)
        XCTAssertEqual(try elsewhere.purgeOtherDeviceItems(), 4)   // no unlock needed: nothing is decrypted
        let info = try elsewhere.info()
        XCTAssertEqual(info.itemsBoundToOtherDevice, 0)
        XCTAssertEqual(info.itemCount, 9)
        try elsewhere.unlock(passphrase: secret("correct horse"))
        XCTAssertEqual(try everything(elsewhere).count, 9)
    }

    /// 100,000 items out and back in. Runs only with KEYCHAINFS_BACKUP_100K set; prints timings.
    func testHundredThousandItemRoundTrip() throws {
        guard ProcessInfo.processInfo.environment["KEYCHAINFS_BACKUP_100K"] != nil else {
            throw XCTSkip("set KEYCHAINFS_BACKUP_100K=1 to run the 100,000-item round trip")
        }
        let n = 100_000
        let source = try scratch.makeVault(device: "source")
        var clock = Date()
        func lap(_ what: String) {
            print(String(format: "backup 100k: %@ %.2f s", what, Date().timeIntervalSince(clock)))
            clock = Date()
        }
        for start in stride(from: 0, to: n, by: 10_000) {
            let batch: [(attributes: Attributes, secret: SecureBytes?)] = try (start..<start + 10_000).map { i in
                (["class": "genp", "svce": .string("service-\(i % 100)"), "acct": .string("account-\(i)"),
                  "labl": .string("label \(i)"), "pdmn": i % 3 == 0 ? "ck" : "ak"], try secret("secret number \(i)"))
            }
            try source.addAll(batch, accessGroups: groups)
        }
        lap("fill")
        let backup = try source.exportBackup(passphrase: secret(backupPass), kdf: .moderate)
        lap("export (\(backup.bytes.count) bytes, Argon2id moderate)")
        XCTAssertEqual(backup.itemCount, n)
        let target = try scratch.makeVault("target.vault", device: "target")
        XCTAssertEqual(try target.importBackup(backup.bytes, passphrase: secret(backupPass)).counted, ImportSummary(added: n))
        lap("import")
        XCTAssertEqual(try target.info().itemCount, n)
        for i in [0, 1, 4_242, 99_999] {
            XCTAssertEqual(try target.password(service: "service-\(i % 100)", account: "account-\(i)"), "secret number \(i)")
        }
        let all = try target.copyMatching(["class": "genp", "m_Limit": "m_LimitAll", "r_Attributes": true],
                                          accessGroups: groups)
        XCTAssertEqual(all.array?.count, n)
        lap("check")
        XCTAssertEqual(try target.importBackup(backup.bytes, passphrase: secret(backupPass)).counted, ImportSummary(skipped: n))
        lap("import again (all skipped)")
    }
}

extension ImportSummary {
    /// The counts alone, to compare with `ImportSummary(added:replaced:skipped:)`.
    var counted: ImportSummary { ImportSummary(added: added, replaced: replaced, skipped: skipped) }
}
