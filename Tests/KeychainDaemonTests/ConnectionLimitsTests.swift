import Dispatch
import Foundation
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// What another local user's connections may cost: descriptors, not threads; bounded bytes;
/// partial frames that end at a deadline; the owner always served.
final class ConnectionLimitsTests: XCTestCase {
    private var d: InProcessDaemon?
    private var open: [Int32] = []

    override func tearDown() {
        for fd in open { close(fd) }
        open = []
        d?.stop()
    }

    func testIdleConnectionsCostNoThreadAndTheOwnerIsAnswered() throws {
        let d = try InProcessDaemon()
        self.d = d
        try d.addPassword(service: "db", account: "app", secret: "s3cret")
        let before = threadCount()
        for _ in 0..<500 { open.append(try d.connect(as: InProcessDaemon.outsider)) }
        // Half of them start a frame and stall.
        for fd in open.prefix(250) { var b: UInt8 = 0; _ = send(fd, &b, 1, 0) }
        XCTAssertEqual(d.server.quotas.connections(uid: InProcessDaemon.outsider.uid), 500)
        let start = Date()
        XCTAssertEqual(secretText(try d.readPassword(service: "db", account: "app")), "s3cret")
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.0)
        XCTAssertLessThanOrEqual(threadCount(), before + 2, "idle connections parked no thread")
    }

    func testConnectionsPerUIDAreCappedButNotTheOwners() throws {
        let d = try InProcessDaemon { $0.connectionsPerUID = 5 }
        self.d = d
        for _ in 0..<5 { open.append(try d.connect(as: InProcessDaemon.outsider)) }
        XCTAssertThrowsError(try d.connect(as: InProcessDaemon.outsider), "the sixth connection is refused")
        for _ in 0..<20 { open.append(try d.connect(as: InProcessDaemon.owner)) }
        XCTAssertEqual(try d.call(Request(.ping), on: open.last!).status, .success)
        close(open.removeFirst())
        XCTAssertTrue(d.server.quotas.connections(uid: InProcessDaemon.outsider.uid) <= 5)
        _ = waitUntil(2) { d.server.quotas.connections(uid: InProcessDaemon.outsider.uid) == 4 }
        open.append(try d.connect(as: InProcessDaemon.outsider))
    }

    func testAStalledFrameIsClosedAtItsDeadline() throws {
        let d = try InProcessDaemon { $0.frameDeadline = 1 }
        self.d = d
        let stalled = try d.connect(as: InProcessDaemon.outsider)
        open.append(stalled)
        let idle = try d.connect(as: InProcessDaemon.outsider)
        open.append(idle)
        var header: [UInt8] = [0, 0, 1]
        XCTAssertEqual(send(stalled, &header, 3, 0), 3)
        XCTAssertTrue(closedByPeer(stalled, within: 4), "a frame begun and not finished is cut off")
        XCTAssertFalse(closedByPeer(idle, within: 0.2), "an idle connection with nothing begun stays")
        XCTAssertEqual(try d.call(Request(.ping), on: idle).status, .success)
    }

    func testPendingBytesPerUIDAreCapped() throws {
        let d = try InProcessDaemon { $0.pendingBytesPerUID = 4 << 20 }
        self.d = d
        // Two frames of 3 MiB from one uid: the second passes the cap and is cut off.
        let length = 3 << 20
        let chunk = [UInt8](repeating: 0x41, count: 1 << 20)
        var fds: [Int32] = []
        for _ in 0..<2 {
            let fd = try d.connect(as: InProcessDaemon.outsider)
            open.append(fd)
            fds.append(fd)
            var header: [UInt8] = [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
            XCTAssertEqual(send(fd, &header, 4, 0), 4)
        }
        // Blocking sends from their own threads: the daemon reads as the bytes arrive.
        let group = DispatchGroup()
        for fd in fds {
            DispatchQueue.global().async(group: group) {
                var timeout = timeval(tv_sec: 20, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                for _ in 0..<2 { _ = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
            }
        }
        group.wait()
        // Generous: on a loaded machine the daemon reads the two streams slowly.
        var closed: [Int32] = []
        let end = Date().addingTimeInterval(15)
        while closed.isEmpty && Date() < end { closed = fds.filter { closedByPeer($0, within: 0.05) } }
        XCTAssertEqual(closed.count, 1, "one of the two frames passed the uid's cap")
        // The owner is not bound by another uid's cap: a 3 MiB secret goes in and comes back.
        let big = String(repeating: "x", count: length)
        try d.addPassword(service: "big", account: "one", secret: big)
        XCTAssertEqual(secretText(try d.readPassword(service: "big", account: "one"))?.count, length)
    }

    func testTooManySlowRequestsOfOneUIDAreRefusedWithAStatus() throws {
        let d = try InProcessDaemon { $0.slowRequestsPerUID = 2 }
        self.d = d
        d.daemon.vault.lock()
        let wrong = Request(.unlock, secrets: [try SecureBytes(copying: Array("wrong".utf8))])
        XCTAssertEqual(try d.call(wrong, as: InProcessDaemon.outsider).status, .authFailed)
        // The back-off now holds the next guesses in the queue: two fit, the third is refused.
        var waiting: [Int32] = []
        for _ in 0..<2 {
            let fd = try d.connect(as: InProcessDaemon.outsider)
            open.append(fd)
            waiting.append(fd)
            try Frame.write(wrong.encoded(), to: fd)
        }
        usleep(200_000)
        XCTAssertEqual(try d.call(wrong, as: InProcessDaemon.outsider).status, .allocate)
        // The owner unlocks meanwhile.
        let right = Request(.unlock, secrets: [try SecureBytes(copying: Array(InProcessDaemon.passphrase.utf8))])
        XCTAssertEqual(try d.call(right).status, .success)
        for fd in waiting {
            guard let frame = try Frame.read(from: fd) else { return XCTFail("a queued guess got no answer") }
            XCTAssertNotEqual(try Response.decode(frame).status, .success)
        }
    }

    private func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end { if condition() { return true }; usleep(10_000) }
        return condition()
    }
}
