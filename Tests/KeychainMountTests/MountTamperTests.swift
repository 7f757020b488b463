import Foundation
import KeychainTestSupport
import SQLiteStore
import XCTest

/// A changed byte in an item's sealed secret gives EIO on read, never a wrong byte; the other
/// files still read (PRODUCT 6).
final class MountTamperTests: MountTestCase {
    func testTamperedCiphertextGivesEIO() throws {
        // Secret lengths tell the rows apart: the data column is the secret plus 40 bytes.
        try add("damaged", "acct", "AAAA")
        try add("intact", "acct", "intact secret")
        var mnt = try mount()
        XCTAssertEqual(FS.read(mnt + "/damaged/acct").bytes, Array("AAAA".utf8))
        XCTAssertTrue(try unmount(mnt), "unmounted")
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        XCTAssertTrue(h.waitUntil(10) { h.daemons().isEmpty }, "the daemon stopped")

        // Flip the last byte (inside the authentication tag) of the damaged item's data.
        let db = try Connection(path: h.vault, create: false)
        try db.execute("""
            UPDATE items SET data = substr(data, 1, length(data) - 1) ||
                CASE WHEN substr(data, -1) = X'00' THEN X'01' ELSE X'00' END
            WHERE length(data) = 44
            """)
        XCTAssertEqual(db.changes, 1, "exactly one row changed")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
        mnt = try mount()
        XCTAssertEqual(FS.read(mnt + "/intact/acct").bytes, Array("intact secret".utf8), "the other file still reads")
        XCTAssertEqual(FS.list(mnt).names?.sorted(), ["damaged", "intact"], "ls needs no secret")
        XCTAssertEqual(FS.stat(mnt + "/damaged/acct").st.map { Int($0.st_size) }, 4, "nor does stat")
        XCTAssertEqual(FS.xattr(mnt + "/damaged/acct", "user.keychain.class"), "genp", "nor getfattr")
        assertErrno(FS.read(mnt + "/damaged/acct").errno, EIO, "reading the tampered file")
        assertErrno(FS.write(mnt + "/damaged/acct", Array("x".utf8), flags: O_WRONLY), EIO, "opening it for a partial write")
        // The failed read is in the audit log, with the reader's executable.
        let audit = try h.run(["audit"]).stdout
        XCTAssertTrue(audit.split(separator: "\n").contains { $0.split(separator: "\t").dropFirst(4).first == "file-damaged" }, audit)
        // The daemon is still serving.
        XCTAssertEqual(FS.read(mnt + "/intact/acct").bytes, Array("intact secret".utf8))
        XCTAssertEqual(try secret("intact", "acct"), "intact secret")
        XCTAssertNotEqual(try find("damaged", "acct").status, 0, "the CLI does not read it either")
    }
}
