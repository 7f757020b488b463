@testable import KeychainSync
import XCTest

/// `sync status`'s counters as the vault keeps them (setting `sync-counters`, docs/vault-format.md).
final class SyncCountersTests: XCTestCase {
    func testCountersReadBackAsWrittenWithoutTheLastError() {
        var c = SyncCounters(pushed: 12, pulled: 345, rejected: 2, conflicts: 1)
        c.lastRejection = "log entry 17: bad signature"
        XCTAssertEqual(String(decoding: c.encoded(), as: UTF8.self),
                       "pushed=12 pulled=345 rejected=2 conflicts=1\nlog entry 17: bad signature")
        XCTAssertEqual(SyncCounters.decode(c.encoded()), c)
        XCTAssertEqual(SyncCounters.decode(SyncCounters().encoded()), SyncCounters())
    }

    func testADamagedValueCountsFromZero() {
        let c = SyncCounters.decode(Array("pushed=x pulled=-4 conflicts=3 rejected".utf8))
        XCTAssertEqual(c, SyncCounters(conflicts: 3))
        XCTAssertEqual(SyncCounters.decode([0xff, 0xfe]), SyncCounters())
    }
}
