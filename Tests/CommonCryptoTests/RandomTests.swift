import CommonCrypto
import XCTest

/// CommonRandom.h: bytes come out, differ between calls, and a nil buffer is refused.
final class RandomTests: XCTestCase {
    func testGeneratesBytes() {
        var a = [UInt8](repeating: 0, count: 64), b = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(CCRandomGenerateBytes(&a, a.count), CCRNGStatus(kCCSuccess))
        XCTAssertEqual(CCRandomGenerateBytes(&b, b.count), CCRNGStatus(kCCSuccess))
        XCTAssertNotEqual(a, b)
        XCTAssertNotEqual(a, [UInt8](repeating: 0, count: 64))
        // 64 random bytes take more than a handful of distinct values.
        XCTAssertGreaterThan(Set(a).count, 20)
    }

    func testNilBuffer() {
        XCTAssertEqual(CCRandomGenerateBytes(nil, 0), CCRNGStatus(kCCSuccess))
        XCTAssertEqual(CCRandomGenerateBytes(nil, 16), CCRNGStatus(kCCParamError))
    }
}
