import KeychainCrypto
import XCTest

final class SecureBytesTests: XCTestCase {
    func testCopiesAndExposesBytesOnlyInsideClosures() {
        let b = SecureBytes(copying: Array("hunter2".utf8))
        XCTAssertEqual(b.count, 7)
        XCTAssertEqual(b.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }, "hunter2")
        XCTAssertEqual(String(describing: b), "SecureBytes(7 bytes)")
    }

    func testWipeReleasesMemory() {
        let b = SecureBytes.random(count: 32)
        XCTAssertFalse(b.isWiped)
        b.wipe()
        XCTAssertTrue(b.isWiped)
        b.wipe()  // idempotent
    }

    func testEmptyBuffer() {
        let b = SecureBytes(count: 0)
        XCTAssertEqual(b.withUnsafeBytes { $0.count }, 0)
        XCTAssertTrue(b.constantTimeEquals(SecureBytes(count: 0)))
    }

    func testConstantTimeEqualsAndSlice() {
        let a = SecureBytes(copying: [1, 2, 3, 4])
        XCTAssertTrue(a.constantTimeEquals(SecureBytes(copying: [1, 2, 3, 4])))
        XCTAssertFalse(a.constantTimeEquals(SecureBytes(copying: [1, 2, 3, 5])))
        XCTAssertFalse(a.constantTimeEquals(SecureBytes(copying: [1, 2, 3])))
        XCTAssertEqual(a.slice(1..<3).withUnsafeBytes { [UInt8]($0) }, [2, 3])
    }

    func testRandomBuffersDiffer() {
        XCTAssertFalse(SecureBytes.random(count: 32).constantTimeEquals(SecureBytes.random(count: 32)))
    }
}
