import Glibc
import KeychainSystem
import XCTest

/// The epoll set, event counter and timer as the daemon's connection server uses them.
final class EpollTests: XCTestCase {
    func testAOneShotEntryFiresOnceUntilRearmed() throws {
        let epoll = try Epoll()
        defer { epoll.close() }
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        defer { close(pair[0]); close(pair[1]) }
        try epoll.add(pair[0], tag: 42, events: [.readable, .oneShot])
        XCTAssertNil(epoll.next(timeoutMilliseconds: 0), "nothing to read yet")
        var byte: UInt8 = 7
        XCTAssertEqual(write(pair[1], &byte, 1), 1)
        let event = try XCTUnwrap(epoll.next(timeoutMilliseconds: 1000))
        XCTAssertEqual(event.tag, 42)
        XCTAssertTrue(event.events.contains(.readable))
        XCTAssertNil(epoll.next(timeoutMilliseconds: 0), "one-shot: disarmed until rearmed, though still readable")
        try epoll.rearm(pair[0], tag: 43, events: [.readable, .oneShot])
        XCTAssertEqual(epoll.next(timeoutMilliseconds: 1000)?.tag, 43)
        try epoll.remove(pair[0])
        XCTAssertThrowsError(try epoll.remove(pair[0])) { XCTAssertEqual($0 as? Errno, Errno(rawValue: ENOENT)) }
    }

    func testTheCounterAndTheTimerWakeAPoller() throws {
        let epoll = try Epoll()
        defer { epoll.close() }
        let counter = try EventCounter(nonBlocking: true)
        defer { counter.close() }
        XCTAssertEqual(counter.drain(), 0, "a non-blocking counter with nothing in it")
        try epoll.add(counter.descriptor, tag: 1, events: .readable)
        counter.signal()
        counter.signal()
        XCTAssertEqual(epoll.next(timeoutMilliseconds: 1000)?.tag, 1)
        XCTAssertEqual(counter.drain(), 2)
        let timer = try PeriodicTimer(everySeconds: 1)
        defer { timer.close() }
        try epoll.add(timer.descriptor, tag: 2, events: [.readable, .oneShot])
        XCTAssertEqual(epoll.next(timeoutMilliseconds: 3000)?.tag, 2, "the first tick within a second or so")
        XCTAssertGreaterThanOrEqual(timer.drain(), 1)
    }
}
