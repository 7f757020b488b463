import KeychainModel
import XCTest

/// The audit log's event names are frozen: a log verifies only while its lines keep their bytes.
final class AuditEventTests: XCTestCase {
    func testNamesAreThoseWrittenBefore() {
        XCTAssertEqual(AuditEvent.allCases.map(\.rawValue), [
            "unlock", "unlock-failed", "lock", "stop", "add", "read", "update", "delete", "denied", "damaged",
            "mount", "unmount", "file-open-read", "file-open-write", "file-denied", "file-damaged",
            "presence-approved", "presence-denied", "groups-changed", "passphrase-changed",
            "export", "import", "imported", "purge-other-device", "verify",
            "sync-init", "sync-join", "sync-approve", "sync-leave", "sync-update", "sync-delete",
            "sign", "decrypt", "key-exchange", "rotated", "sync-remove", "sync-history",
            "sync-set", "sync-restore",
        ])
        XCTAssertEqual(AuditEvent.fileOpenRead.repeated, "file-open-read-repeated")
        XCTAssertEqual(AuditEvent.add.failed, "add-failed")
        XCTAssertTrue(AuditEvent.isRecorded("read-repeated"))
        XCTAssertFalse(AuditEvent.isRecorded("reed"))
    }
}
