import Glibc
import KeychainCrypto
import KeychainModel
import KeychainProtocol
import XCTest

func bytes(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

/// A connected pair of Unix stream sockets, both closed at the end of the test.
final class SocketPair: @unchecked Sendable {
    var fds: [Int32] = [-1, -1]
    init() throws {
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw KeychainStatus.io }
    }
    var writer: Int32 { fds[0] }
    var reader: Int32 { fds[1] }
    /// Writes raw bytes (a peer that frames by hand) and returns how many went.
    func send(_ b: [UInt8]) -> Int { b.withUnsafeBytes { Glibc.send(writer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
    func closeWriter() { if fds[0] >= 0 { close(fds[0]); fds[0] = -1 } }
    deinit { for fd in fds where fd >= 0 { close(fd) } }
}

/// Frames on a real socket pair: a big-endian u32 length and the payload; a frame longer than
/// `Frame.maximumLength` is refused (`errSecDecode`) before any of it is read, a short one is
/// errSecIO, and a clean end of stream is nil.
final class FrameTests: XCTestCase {
    func testAFrameIsItsLengthThenItsBytes() throws {
        let pair = try SocketPair()
        try Frame.write(try SecureBytes(copying: [9, 8, 7]), to: pair.writer)
        var raw = [UInt8](repeating: 0, count: 16)
        let n = recv(pair.reader, &raw, raw.count, 0)
        XCTAssertEqual(Array(raw.prefix(n)), [0, 0, 0, 3, 9, 8, 7])
        XCTAssertEqual(Frame.header(for: try SecureBytes(count: 0x010203)), [0, 1, 2, 3])
    }

    func testFramesRoundTripThroughBothReaders() throws {
        let pair = try SocketPair()
        let payloads: [[UInt8]] = [[], [1], Array(repeating: 0x5a, count: 511), Array(repeating: 0xa5, count: 513),
                                   (0..<200_000).map { UInt8(truncatingIfNeeded: $0) }]
        // Written from another thread: the large frame is more than the socket buffer holds.
        let writer = Thread {
            for p in payloads + payloads { try? Frame.write(try! SecureBytes(copying: p), to: pair.writer) }
            pair.closeWriter()
        }
        writer.start()
        for p in payloads { XCTAssertEqual(try Frame.read(from: pair.reader).map(bytes), p) }
        let reader = try FrameReader(fd: pair.reader)
        for p in payloads { XCTAssertEqual(try reader.read().map(bytes), p) }
        XCTAssertNil(try reader.read(), "a clean end of stream")
    }

    func testAnOversizedFrameIsRefusedAsDecode() throws {
        for useReader in [false, true] {
            let pair = try SocketPair()
            let length = UInt32(Frame.maximumLength + 1)
            XCTAssertEqual(pair.send([UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]), 4)
            XCTAssertThrowsError(try useReader ? FrameReader(fd: pair.reader).read() : Frame.read(from: pair.reader)) {
                XCTAssertEqual($0 as? KeychainStatus, .decode)
            }
        }
        XCTAssertEqual(Frame.maximumLength, ItemLimits.maximumSecretLength + ItemLimits.frameOverhead)
        XCTAssertEqual(Frame.maximumLength, 17 << 20)
    }

    func testTheLargestFrameIsRead() throws {
        let pair = try SocketPair()
        let length = Frame.maximumLength
        let writer = Thread {
            try? Frame.write(try! SecureBytes(count: length), to: pair.writer)
            pair.closeWriter()
        }
        writer.start()
        XCTAssertEqual(try Frame.read(from: pair.reader)?.count, length)
        XCTAssertNil(try Frame.read(from: pair.reader))
    }

    func testTruncatedFramesAreIO() throws {
        for useReader in [false, true] {
            // A header cut short.
            let short = try SocketPair()
            XCTAssertEqual(short.send([0, 0]), 2)
            short.closeWriter()
            XCTAssertThrowsError(try useReader ? FrameReader(fd: short.reader).read() : Frame.read(from: short.reader)) {
                XCTAssertEqual($0 as? KeychainStatus, .io)
            }
            // A payload cut short, small and past the reader's buffer.
            for (announced, sent) in [(10, 3), (100_000, 70_000)] {
                let pair = try SocketPair()
                let a = UInt32(announced)
                let peer = Thread {
                    _ = pair.send([UInt8(a >> 24), UInt8(a >> 16 & 0xff), UInt8(a >> 8 & 0xff), UInt8(a & 0xff)]
                                  + Array(repeating: 1, count: sent))
                    pair.closeWriter()
                }
                peer.start()
                XCTAssertThrowsError(try useReader ? FrameReader(fd: pair.reader).read() : Frame.read(from: pair.reader),
                                     "\(sent) of \(announced)") {
                    XCTAssertEqual($0 as? KeychainStatus, .io)
                }
            }
        }
    }

    func testWritingToAClosedPeerIsIO() throws {
        let pair = try SocketPair()
        close(pair.fds[1]); pair.fds[1] = -1
        XCTAssertThrowsError(try Frame.write(try SecureBytes(copying: [1]), to: pair.writer)) {
            XCTAssertEqual($0 as? KeychainStatus, .io)
        }
    }
}
