import CProcess
import Foundation
import Glibc
import KeychainCore
import KeychainfsAccess
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// A descriptor a caller passes (SCM_RIGHTS) never stays in the daemon unless it is a mount's
/// /dev/fuse: each test passes a pipe's write end and sees the pipe reach end of file, which
/// happens only once every copy of that end, the daemon's too, is closed.
final class PassedDescriptorTests: XCTestCase {
    var d: InProcessDaemon!

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop(); d = nil }

    /// Sends `request` with `passing` attached to its first bytes; returns the response, nil
    /// when the daemon closed the connection instead.
    func call(_ request: Request, passing: Int32, as caller: CallerIdentity = InProcessDaemon.owner) throws -> Response? {
        let fd = try d.connect(as: caller)
        defer { close(fd) }
        return try call(request, passing: passing, on: fd)
    }

    func call(_ request: Request, passing: Int32, on fd: Int32) throws -> Response? {
        let payload = try request.encoded()
        let header = Frame.header(for: payload)
        XCTAssertEqual(header.withUnsafeBytes { kcfs_send_with_fd(fd, $0.baseAddress, $0.count, passing) }, 4)
        // The daemon may close the connection before the body is written.
        try? Frame.writeBody(payload, to: fd)
        // Closed with the request unread, the connection may end in a reset rather than at EOF.
        guard let frame = try? Frame.read(from: fd) else { return nil }
        return try Response.decode(frame)
    }

    /// True when the pipe's read end sees end of file (every write end closed) within 10 s.
    func reachesEnd(_ readEnd: Int32) -> Bool {
        var p = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 10_000) == 1 else { return false }
        var byte: UInt8 = 0
        return read(readEnd, &byte, 1) == 0
    }

    func pipeEnds() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw KeychainStatus.io }
        return (fds[0], fds[1])
    }

    func testDescriptorWithAnotherRequestIsClosed() throws {
        let p = try pipeEnds()
        defer { close(p.read) }
        let r = try call(Request(.ping), passing: p.write)
        close(p.write)
        XCTAssertEqual(r?.status, .success)
        XCTAssertTrue(reachesEnd(p.read), "the daemon kept the descriptor a ping brought")
    }

    /// A caller that may not mount gets no room for a descriptor: the kernel drops it before it
    /// enters the daemon, and the connection is closed unanswered.
    func testOutsidersDescriptorNeverEntersTheDaemon() throws {
        let p = try pipeEnds()
        defer { close(p.read) }
        let r = try call(Request(.ping), passing: p.write, as: InProcessDaemon.outsider)
        close(p.write)
        XCTAssertNil(r, "a connection that passed a descriptor it may not is closed")
        XCTAssertTrue(reachesEnd(p.read), "the outsider's descriptor stayed open somewhere")
        XCTAssertEqual(try d.call(Request(.ping), as: InProcessDaemon.outsider).status, .success,
                       "the outsider's next connection is served")
    }

    /// The owner's descriptors that are not /dev/fuse are closed off the event threads; one
    /// connection that keeps passing them is dropped after a few.
    func testConnectionThatKeepsPassingDescriptorsIsDropped() throws {
        let fd = try d.connect(as: InProcessDaemon.owner)
        defer { close(fd) }
        var answered = 0
        for _ in 0...Connection.unwantedLimit {
            let p = try pipeEnds()
            defer { close(p.read) }
            let r = try call(Request(.ping), passing: p.write, on: fd)
            close(p.write)
            XCTAssertTrue(reachesEnd(p.read), "a passed descriptor stayed open")
            guard r != nil else { break }
            answered += 1
        }
        XCTAssertEqual(answered, Connection.unwantedLimit, "pings answered before the connection was dropped")
    }

    func testMountRefusesADescriptorThatIsNotTheFUSEDevice() throws {
        let p = try pipeEnds()
        defer { close(p.read) }
        let point = d.dir + "/mnt"
        try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: false)
        let r = try call(Request(.mount, options: ["mountpoint": .string(point), "options": .string("")]), passing: p.write)
        close(p.write)
        XCTAssertEqual(r?.status, .param, "a pipe is not /dev/fuse")
        XCTAssertTrue(reachesEnd(p.read), "the daemon kept the refused descriptor")
    }
}
