import KeychainSSHAgent
import XCTest

/// Frames: a message split across reads or two in one read come out whole; a length of zero or
/// over 256 KiB is refused from its four bytes, before the body is buffered.
final class FrameBufferTests: XCTestCase {
    func testAFrameInPiecesComesOutWhole() {
        var buffer = AgentFrameBuffer()
        buffer.append([0, 0, 0])
        XCTAssertEqual(buffer.next(), .needMore)
        buffer.append([1])
        XCTAssertEqual(buffer.next(), .needMore)
        buffer.append([11])
        XCTAssertEqual(buffer.next(), .frame([11]))
        XCTAssertEqual(buffer.bufferedCount, 0)
    }

    func testTwoFramesInOneReadComeOutInOrder() {
        var buffer = AgentFrameBuffer()
        buffer.append(AgentFrame.encode([11]) + AgentFrame.encode([19]))
        XCTAssertEqual(buffer.next(), .frame([11]))
        XCTAssertEqual(buffer.next(), .frame([19]))
        XCTAssertEqual(buffer.next(), .needMore)
    }

    func testOversizedAndEmptyFramesAreRefusedFromTheirLength() {
        var oversized = AgentFrameBuffer()
        oversized.append([0, 0x04, 0, 1])  // 256 KiB + 1
        XCTAssertEqual(oversized.next(), .refused(256 * 1024 + 1))
        var largest = AgentFrameBuffer()
        largest.append([0, 0x04, 0, 0])  // exactly 256 KiB: waits for its body
        XCTAssertEqual(largest.next(), .needMore)
        var empty = AgentFrameBuffer()
        empty.append([0, 0, 0, 0])
        XCTAssertEqual(empty.next(), .refused(0))
    }
}
