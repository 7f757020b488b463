import Foundation
import KeychainCore
import KeychainCrypto
import SQLiteStore
import XCTest

/// PRODUCT 4: nothing in plaintext on disk; tampering is detected; bad files are refused.
final class StorageTests: XCTestCase {
    var scratch: Scratch!

    // XCTest keeps every test case alive to the end of the run: the scratch directory goes now.
    override func tearDown() { scratch = nil }

    override func setUpWithError() throws { scratch = try Scratch() }

    func fileBytes(_ path: String) -> [UInt8] {
        (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) ?? []
    }

    func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard haystack.count >= n.count else { return false }
        return (0...(haystack.count - n.count)).contains { i in haystack[i] == n[0] && haystack[i..<i + n.count].elementsEqual(n) }
    }

    func testNoPlaintextInVaultWALOrSHM() throws {
        let vault = try scratch.makeVault(passphrase: "passphrase-QX7")
        let needles = ["service-QX7", "account-QX7", "label-QX7", "secret-QX7", "comment-QX7", "group-QX7", "updated-QX7"]
        try vault.add(["class": "genp", "svce": "service-QX7", "acct": "account-QX7", "labl": "label-QX7",
                       "icmt": "comment-QX7", "agrp": "group-QX7"], secret: secret("secret-QX7"), accessGroups: ["group-QX7"])
        try vault.add(["class": "inet", "srvr": "service-QX7.example", "acct": "account-QX7"],
                      secret: secret("secret-QX7-inet"), accessGroups: ["group-QX7"])
        try vault.add(["class": "genp", "svce": "service-QX7", "acct": "second"], secret: secret("secret-QX7-2"),
                      accessGroups: ["group-QX7"])
        try vault.update(["class": "genp", "acct": "second"], changes: ["v_Data": "updated-QX7"], accessGroups: ["group-QX7"])
        try vault.delete(["class": "genp", "acct": "second"], accessGroups: ["group-QX7"])
        var scanned = 0
        for suffix in ["", "-wal", "-shm"] {
            let bytes = fileBytes(scratch.path() + suffix)
            scanned += bytes.count
            for needle in needles {
                XCTAssertFalse(contains(bytes, needle), "\(needle) found in vault\(suffix)")
            }
        }
        XCTAssertGreaterThan(scanned, 4096, "the scan saw the files")
        // The check itself can see a plaintext string when one is there.
        XCTAssertTrue(contains(fileBytes(scratch.path()), "SQLite format 3"))
        XCTAssertTrue(contains(fileBytes(scratch.path()), "KCFSVLT") || contains(fileBytes(scratch.path() + "-wal"), "KCFSVLT"))
    }

    // MARK: Tampering

    /// Two items, and a raw connection to the same file for tampering.
    func tamperSetup() throws -> (Vault, Connection) {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "s", account: "one", secret: "first secret")
        try vault.addPassword(service: "s", account: "two", secret: "second secret")
        return (vault, try Connection(path: scratch.path(), create: false))
    }

    func blob(_ db: Connection, _ column: String, account rowid: Int64) throws -> [UInt8] {
        let st = try db.prepare("SELECT \(column) FROM items WHERE rowid = ?")
        try st.bind(.integer(rowid))
        XCTAssertTrue(try st.step())
        defer { st.reset() }
        return st.blob(0) ?? []
    }

    func setBlob(_ db: Connection, _ column: String, rowid: Int64, _ value: [UInt8]) throws {
        try db.prepare("UPDATE items SET \(column) = ? WHERE rowid = ?").bind(.blob(value), .integer(rowid)).run()
    }

    func testFlippingAnyByteOfAStoredCiphertextGivesDecode() throws {
        let (vault, db) = try tamperSetup()
        for column in ["data", "attrs", "wrapped_key"] {
            let original = try blob(db, column, account: 1)
            for i in original.indices {
                var bad = original
                bad[i] ^= 0x40
                try setBlob(db, column, rowid: 1, bad)
                XCTAssertStatus(.decode, try vault.password(service: "s", account: "one"))
                XCTAssertEqual(try vault.password(service: "s", account: "two"), "second secret")
            }
            try setBlob(db, column, rowid: 1, original)
            XCTAssertEqual(try vault.password(service: "s", account: "one"), "first secret")
        }
    }

    func testSwappingTwoItemsBlobsGivesDecode() throws {
        let (vault, db) = try tamperSetup()
        for column in ["data", "attrs", "wrapped_key"] {
            let a = try blob(db, column, account: 1), b = try blob(db, column, account: 2)
            try setBlob(db, column, rowid: 1, b)
            try setBlob(db, column, rowid: 2, a)
            XCTAssertStatus(.decode, try vault.password(service: "s", account: "one"))
            XCTAssertStatus(.decode, try vault.password(service: "s", account: "two"))
            try setBlob(db, column, rowid: 1, a)
            try setBlob(db, column, rowid: 2, b)
        }
        // A blob copied from the secret part into the attribute part of the same item.
        let data = try blob(db, "data", account: 1)
        try setBlob(db, "attrs", rowid: 1, data)
        XCTAssertStatus(.decode, try vault.password(service: "s", account: "one"))
        XCTAssertEqual(try vault.password(service: "s", account: "two"), "second secret")
    }

    func testChangingClearProtectionColumnGivesDecode() throws {
        let (vault, db) = try tamperSetup()
        try db.prepare("UPDATE items SET pdmn = 3 WHERE rowid = 1").run()  // claim "Always"
        vault.lock()
        XCTAssertStatus(.decode, try vault.password(service: "s", account: "one"))
    }

    func testMovingAnItemIntoAnotherGroupByItsTokenGivesDecode() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "s", account: "mine", secret: "a", ["agrp": "app.shared"])
        try vault.addPassword(service: "s", account: "theirs", secret: "b", ["agrp": "app.default"])
        let db = try Connection(path: scratch.path(), create: false)
        let token = try blob(db, "agrp_token", account: 2)
        try setBlob(db, "agrp_token", rowid: 1, token)
        XCTAssertStatus(.decode, try vault.password(service: "s", account: "mine", groups: ["app.default"]))
        XCTAssertEqual(try vault.password(service: "s", account: "theirs", groups: ["app.default"]), "b")
    }

    func testDeviceKeyFileMustBeExactAndPrivate() throws {
        let path = scratch.dir + "/bad.key"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 33)))
        XCTAssertStatus(.io, try DeviceKey.loadOrCreate(at: path))
        try FileManager.default.removeItem(atPath: path)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 32),
                                                     attributes: [.posixPermissions: 0o666]))
        XCTAssertStatus(.io, try DeviceKey.loadOrCreate(at: path))
    }

    func testEveryFlippedHeaderByteIsRefusedWithoutCrash() throws {
        _ = try tamperSetup()
        let db = try Connection(path: scratch.path(), create: false)
        let st = try db.prepare("SELECT value FROM meta WHERE key = 'header'")
        XCTAssertTrue(try st.step())
        let header = st.blob(0) ?? []
        st.reset()
        XCTAssertGreaterThan(header.count, 100)
        let device = try scratch.deviceKey()
        // Bytes 13..<29 are the Argon2id cost: flips there that stay within the accepted range
        // only make unlocking slower, so they are covered by one check instead of each bit.
        for i in header.indices where !(13..<29).contains(i) {
            var bad = header
            bad[i] ^= 0x01
            try db.prepare("UPDATE meta SET value = ? WHERE key = 'header'").bind(.blob(bad)).run()
            do {
                let v = try Vault.open(at: scratch.path(), deviceKey: device)
                try v.unlock(passphrase: secret("correct horse"))
                // Bytes that carry no meaning for this vault (a wrapper of another slot's copy)
                // may still unlock; then every item must still read correctly.
                XCTAssertEqual(try v.password(service: "s", account: "one"), "first secret", "byte \(i)")
            } catch {
                XCTAssertTrue(error is KeychainStatus || error is VaultFileError, "byte \(i): \(error)")
            }
        }
    }

    func testAbsurdKDFCostInHeaderIsRefused() throws {
        _ = try tamperSetup()
        let db = try Connection(path: scratch.path(), create: false)
        let st = try db.prepare("SELECT value FROM meta WHERE key = 'header'")
        XCTAssertTrue(try st.step())
        var header = st.blob(0) ?? []
        st.reset()
        header[16] = 0x7f  // opsLimit high bytes: billions of passes
        try db.prepare("UPDATE meta SET value = ? WHERE key = 'header'").bind(.blob(header)).run()
        XCTAssertThrowsError(try Vault.open(at: scratch.path(), deviceKey: try scratch.deviceKey())) {
            XCTAssertEqual($0 as? VaultFileError, .corruptHeader)
        }
    }

    // MARK: Bad files

    func testMissingFile() {
        XCTAssertThrowsError(try Vault.open(at: scratch.path("none.vault"), deviceKey: try scratch.deviceKey())) {
            XCTAssertEqual($0 as? VaultFileError, .missing)
            XCTAssertEqual(($0 as? VaultFileError)?.status, .noSuchKeychain)
        }
    }

    func testCreateRefusesExistingFile() throws {
        _ = try scratch.makeVault()
        XCTAssertThrowsError(try scratch.makeVault()) { XCTAssertEqual($0 as? VaultFileError, .exists) }
    }

    func testNotSQLiteIsRefusedAndUntouched() throws {
        let path = scratch.path("text.vault")
        let text = Data(String(repeating: "not a database at all\n", count: 200).utf8)
        try text.write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try Vault.open(at: path, deviceKey: try scratch.deviceKey())) {
            XCTAssertEqual($0 as? VaultFileError, .notAVault)
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), text)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-wal"))
    }

    func testOtherSQLiteDatabaseIsRefusedAndUntouched() throws {
        let path = scratch.path("other.db")
        do {
            let db = try Connection(path: path, create: true)
            try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES(1)")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try Vault.open(at: path, deviceKey: try scratch.deviceKey())) {
            XCTAssertEqual($0 as? VaultFileError, .corruptHeader)
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before)
    }

    func testTruncatedVaultIsRefused() throws {
        do { try tamperSetup().0.lock() }  // closes when the vault goes away
        let full = try Data(contentsOf: URL(fileURLWithPath: scratch.path()))
        for length in [0, 50, 100, full.count / 2] {
            let path = scratch.path("cut-\(length).vault")
            try full.prefix(length).write(to: URL(fileURLWithPath: path))
            XCTAssertThrowsError(try Vault.open(at: path, deviceKey: try scratch.deviceKey()), "length \(length)") {
                XCTAssertNotNil($0 as? VaultFileError, "length \(length): \($0)")
            }
        }
    }

    /// SQLite reads a cut last page as zeros and ignores bytes past its page count: only the
    /// length, checked before SQLite opens the file, tells. Nothing is made beside a refused file.
    func testAVaultCutInsideItsLastPageOrLongerThanItsPagesIsRefused() throws {
        do { try tamperSetup().0.lock() }  // closed: checkpointed, no WAL left
        let full = fileBytes(scratch.path())
        let pageSize = Int(full[16]) << 8 | Int(full[17])
        XCTAssertEqual(full.count % pageSize, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.path() + "-wal"))
        let variants: [(String, [UInt8])] = [("cut-1500", Array(full.dropLast(1500))), ("cut-1", Array(full.dropLast())),
                                             ("long-1", full + [0]), ("long-page", full + [UInt8](repeating: 0, count: pageSize))]
        for (name, bytes) in variants {
            let path = scratch.path("\(name).vault")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            XCTAssertThrowsError(try Vault.open(at: path, deviceKey: try scratch.deviceKey()), name) {
                XCTAssertEqual($0 as? VaultFileError, .notAVault, name)
            }
            XCTAssertThrowsError(try Vault.checkIsVault(at: path), name)
            XCTAssertEqual(fileBytes(path), bytes, "\(name): unchanged")
            for suffix in ["-wal", "-shm"] {
                XCTAssertFalse(FileManager.default.fileExists(atPath: path + suffix), "\(name): no \(suffix) made")
            }
        }
        let control = scratch.path("control.vault")
        try Data(full).write(to: URL(fileURLWithPath: control))
        XCTAssertNoThrow(try Vault.open(at: control, deviceKey: try scratch.deviceKey()))
    }

    /// Beside a WAL the file may lack pages the WAL holds (they are read from it), never one it
    /// does not hold.
    func testBesideAWALTheFileMustHoldEveryPageTheWALDoesNot() throws {
        do {
            let vault = try scratch.makeVault()
            for i in 0..<40 { try vault.addPassword(service: "s", account: "a\(i)", secret: String(repeating: "x", count: 2000)) }
        }
        // One small change, its pages in the WAL, both files copied while it is open.
        let live = scratch.path("live.vault"), wal = scratch.path("live.vault-wal")
        do {
            let c = try Connection(path: scratch.path(), create: false)
            try c.execute("INSERT INTO meta(key, value) VALUES('test.length', x'00')")
            try FileManager.default.copyItem(atPath: scratch.path(), toPath: live)
            try FileManager.default.copyItem(atPath: scratch.path() + "-wal", toPath: wal)
        }
        let file = fileBytes(live), log = fileBytes(wal)
        let pageSize = Int(file[16]) << 8 | Int(file[17])
        let held = Self.walPages(log)
        let pages = file.count / pageSize
        XCTAssertGreaterThan(pages, 8)
        XCTAssertFalse(held.isEmpty, "the change is in the WAL (\(log.count) bytes)")
        XCTAssertFalse(held.contains(pages), "the file's last page is not in the WAL: \(held)")
        XCTAssertNoThrow(try Vault.open(at: live, deviceKey: try scratch.deviceKey()), "control: the file and its WAL open")

        let cut = scratch.path("cut.vault")
        try Data(file.dropLast(1500)).write(to: URL(fileURLWithPath: cut))
        try Data(log).write(to: URL(fileURLWithPath: cut + "-wal"))
        XCTAssertThrowsError(try Vault.open(at: cut, deviceKey: try scratch.deviceKey())) {
            XCTAssertEqual($0 as? VaultFileError, .notAVault)
        }
        XCTAssertEqual(fileBytes(cut), Array(file.dropLast(1500)))
        XCTAssertEqual(fileBytes(cut + "-wal"), log, "the WAL is left as it was")
        XCTAssertFalse(FileManager.default.fileExists(atPath: cut + "-shm"))
    }

    /// The pages of a WAL's frames whose salts are its header's (page numbers, big-endian, at
    /// the start of each 24-byte frame header).
    static func walPages(_ wal: [UInt8]) -> Set<Int> {
        guard wal.count >= 32 else { return [] }
        let be32 = { (o: Int) in wal[o..<o + 4].reduce(0) { $0 << 8 | Int($1) } }
        let pageSize = be32(8)
        var pages = Set<Int>()
        var frame = 32
        while frame + 24 + pageSize <= wal.count, wal[frame + 8..<frame + 16].elementsEqual(wal[16..<24]) {
            pages.insert(be32(frame))
            frame += 24 + pageSize
        }
        return pages
    }

    func testNewerFormatIsRefused() throws {
        _ = try tamperSetup()
        let db = try Connection(path: scratch.path(), create: false)
        let st = try db.prepare("SELECT value FROM meta WHERE key = 'header'")
        XCTAssertTrue(try st.step())
        var header = st.blob(0) ?? []
        st.reset()
        header[8] = 0; header[9] = 2  // format version, big-endian, after the 8-byte magic
        try db.prepare("UPDATE meta SET value = ? WHERE key = 'header'").bind(.blob(header)).run()
        XCTAssertThrowsError(try Vault.open(at: scratch.path(), deviceKey: try scratch.deviceKey())) {
            XCTAssertEqual($0 as? VaultFileError, .newerFormat(found: 2, supported: 1))
        }
    }

    func testDurableAcrossReopen() throws {
        do {
            let vault = try scratch.makeVault()
            for i in 0..<50 { try vault.addPassword(service: "d", account: "a\(i)", secret: "v\(i)", ["pdmn": "ck"]) }
        }
        let vault = try Vault.open(at: scratch.path(), deviceKey: try scratch.deviceKey())
        try vault.unlock(passphrase: secret("correct horse"))
        let all = try vault.copyMatching(["class": "genp", "svce": "d", "m_Limit": "m_LimitAll", "r_Data": true],
                                         accessGroups: groups)
        XCTAssertEqual(all.array?.compactMap { $0.data?.string }, (0..<50).map { "v\($0)" })
    }
}
