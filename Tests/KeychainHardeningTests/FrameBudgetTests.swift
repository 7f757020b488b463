import Dispatch
import Glibc
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import KeychainTestSupport
import XCTest

/// Out of guarded memory, the socket's framing and messages answer `errSecAllocate`, never trap.
final class FrameBudgetTests: XCTestCase {
    private var savedBudget = 0

    override func setUp() { savedBudget = SecureBytes.budget }
    override func tearDown() { SecureBytes.budget = savedBudget }

    func testFrameGrowingPastTheBudgetIsAllocateStatus() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        let (writer, reader) = (fds[0], fds[1])
        // A 3 MiB frame: the reader's buffer grows as the bytes arrive, to 3 MiB in the end,
        // and the budget allows no new mapping (free slots of the pool may serve the first steps).
        let length = 3 << 20
        let stream = [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            + [UInt8](repeating: 7, count: length)
        let sent = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = stream.withUnsafeBytes { send(writer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(writer)
            sent.signal()
        }
        SecureBytes.budget = SecureBytes.mappedBytes
        XCTAssertThrowsError(try Frame.read(from: reader)) { XCTAssertEqual($0 as? KeychainStatus, .allocate) }
        close(reader)  // the writer's send ends with EPIPE
        sent.wait()
    }

    func testEncodingPastTheBudgetIsAllocateStatus() throws {
        let secret = try SecureBytes(count: 3 << 20)
        SecureBytes.budget = SecureBytes.mappedBytes
        XCTAssertThrowsError(try Request(.add, query: ["class": "genp"], secrets: [secret]).encoded()) {
            XCTAssertEqual($0 as? KeychainStatus, .allocate)
        }
        XCTAssertThrowsError(try Response(result: .value(.data(secret))).encoded()) {
            XCTAssertEqual($0 as? KeychainStatus, .allocate)
        }
    }
}
