import KeychainCrypto
import XCTest

final class SecureBytesTests: XCTestCase {
    func testCopiesAndExposesBytesOnlyInsideClosures() throws {
        let b = try SecureBytes(copying: Array("hunter2".utf8))
        XCTAssertEqual(b.count, 7)
        XCTAssertEqual(b.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }, "hunter2")
        XCTAssertEqual(String(describing: b), "SecureBytes(7 bytes)")
    }

    func testWipeReleasesMemory() throws {
        let b = try SecureBytes.random(count: 32)
        XCTAssertFalse(b.isWiped)
        b.wipe()
        XCTAssertTrue(b.isWiped)
        b.wipe()  // idempotent
    }

    func testEmptyBuffer() throws {
        let b = try SecureBytes(count: 0)
        XCTAssertEqual(b.withUnsafeBytes { $0.count }, 0)
        XCTAssertTrue(b.constantTimeEquals(try SecureBytes(count: 0)))
    }

    func testConstantTimeEqualsAndSlice() throws {
        let a = try SecureBytes(copying: [1, 2, 3, 4])
        XCTAssertTrue(a.constantTimeEquals(try SecureBytes(copying: [1, 2, 3, 4])))
        XCTAssertFalse(a.constantTimeEquals(try SecureBytes(copying: [1, 2, 3, 5])))
        XCTAssertFalse(a.constantTimeEquals(try SecureBytes(copying: [1, 2, 3])))
        XCTAssertEqual(try a.slice(1..<3).withUnsafeBytes { [UInt8]($0) }, [2, 3])
    }

    func testManyLiveSmallBuffersDoNotExhaustMappings() throws {
        // One sodium_malloc per buffer would pass vm.max_map_count (65530) here.
        let live = try (0..<100_000).map { _ in try SecureBytes(count: 32) }
        XCTAssertEqual(live.count, 100_000)
    }

    func testReleasedSlotsComeBackZeroed() throws {
        for _ in 0..<1000 {
            let b = try SecureBytes(copying: [UInt8](repeating: 0xAB, count: 48))
            b.wipe()
            let fresh = try SecureBytes(count: 48)
            XCTAssertTrue(fresh.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
        }
    }

    func testLargeBuffersStillWork() throws {
        let big = try SecureBytes.random(count: 3 << 20)
        XCTAssertEqual(big.count, 3 << 20)
        XCTAssertEqual(try big.slice(0..<16).count, 16)
    }

    func testRandomBuffersDiffer() throws {
        XCTAssertFalse(try SecureBytes.random(count: 32).constantTimeEquals(try SecureBytes.random(count: 32)))
    }
}
