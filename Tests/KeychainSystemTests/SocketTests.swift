import Glibc
import KeychainSystem
import XCTest

final class SocketTests: XCTestCase {
    private var scratch: ScratchDirectory!

    override func setUpWithError() throws { scratch = try ScratchDirectory() }
    override func tearDown() { scratch?.remove() }

    func testADescriptorPassesOverASocketPair() throws {
        let (a, b) = try FileDescriptor.unixStreamPair()
        defer { try? a.close(); try? b.close() }
        try Data("passed along".utf8).write(to: URL(fileURLWithPath: scratch.file("f")))
        let file = try FileDescriptor.open(scratch.file("f"), .readOnly)
        XCTAssertEqual(try Array("x".utf8).withUnsafeBytes { try a.send($0, passing: file) }, 1)
        try file.close()  // the receiver's copy stays open

        var byte = [UInt8](repeating: 0, count: 4)
        let (count, received) = try byte.withUnsafeMutableBytes { try b.receive(into: $0) }
        XCTAssertEqual(count, 1)
        XCTAssertEqual(byte[0], UInt8(ascii: "x"))
        let got = try XCTUnwrap(received)
        defer { try? got.close() }
        XCTAssertNotEqual(fcntl(got.rawValue, F_GETFD) & FD_CLOEXEC, 0)  // received close-on-exec
        XCTAssertEqual(try got.readToEnd(limit: 100), Array("passed along".utf8))

        // Bytes without a descriptor give none.
        try Array("y".utf8).withUnsafeBytes { try a.sendAll($0) }
        let plain = try byte.withUnsafeMutableBytes { try b.receive(into: $0) }
        XCTAssertEqual(plain.count, 1)
        XCTAssertNil(plain.descriptor)
    }

    func testWaitingUntilReadableSeesBytesAndTheEndOfTheStream() throws {
        let (a, b) = try FileDescriptor.unixStreamPair()
        defer { try? b.close() }
        XCTAssertFalse(try b.waitUntilReadable(timeoutMilliseconds: 0))
        try Array("z".utf8).withUnsafeBytes { try a.sendAll($0) }
        XCTAssertTrue(try b.waitUntilReadable(timeoutMilliseconds: 0))
        var byte = [UInt8](repeating: 0, count: 1)
        XCTAssertEqual(try byte.withUnsafeMutableBytes { try b.read(into: $0) }, 1)
        XCTAssertFalse(try b.waitUntilReadable(timeoutMilliseconds: 0))
        try a.close()
        XCTAssertTrue(try b.waitUntilReadable(timeoutMilliseconds: -1))  // the end of the stream is readable
        XCTAssertEqual(try byte.withUnsafeMutableBytes { try b.read(into: $0) }, 0)
    }

    func testPeerCredentialsNameThisProcess() throws {
        let (a, b) = try FileDescriptor.unixStreamPair()
        defer { try? a.close(); try? b.close() }
        XCTAssertEqual(try a.peerCredentials(), PeerCredentials(pid: getpid(), uid: geteuid(), gid: getegid()))
        let file = try FileDescriptor.open("/dev/null", .readOnly)
        defer { try? file.close() }
        XCTAssertEqual(thrownErrno { try file.peerCredentials() }, .notSocket)
    }

    func testConnectingFindsNothingThenARefusalThenAListener() throws {
        let path = scratch.file("s.sock")
        let client = try FileDescriptor.unixStreamSocket()
        defer { try? client.close() }
        XCTAssertEqual(thrownErrno { try client.connect(unixPath: path) }, .noSuchFile)

        let server = try FileDescriptor.unixStreamSocket()
        defer { try? server.close() }
        try server.bind(unixPath: path)
        XCTAssertEqual(try FileSystem.status(of: path).kind, .socket)
        let rival = try FileDescriptor.unixStreamSocket()
        defer { try? rival.close() }
        XCTAssertEqual(thrownErrno { try rival.bind(unixPath: path) }, .addressInUse)
        XCTAssertEqual(thrownErrno { try client.connect(unixPath: path) }, .connectionRefused)  // bound, not listening

        try server.listen(backlog: 4)
        let second = try FileDescriptor.unixStreamSocket()
        defer { try? second.close() }
        try second.connect(unixPath: path)
        let accepted = FileDescriptor(rawValue: accept(server.rawValue, nil, nil))
        defer { try? accepted.close() }
        XCTAssertEqual(try accepted.peerCredentials().pid, getpid())
        XCTAssertEqual(try Array("hi".utf8).withUnsafeBytes { try second.send($0) }, 2)
        var got = [UInt8](repeating: 0, count: 2)
        XCTAssertEqual(try got.withUnsafeMutableBytes { try accepted.readAll(into: $0) }, 2)
        XCTAssertEqual(got, Array("hi".utf8))
    }

    func testAPathTooLongForASocketIsNameTooLong() throws {
        let long = "/" + String(repeating: "a", count: 107)  // 108 bytes: no room for the 0
        XCTAssertFalse(FileDescriptor.fitsUnixAddress(long))
        XCTAssertTrue(FileDescriptor.fitsUnixAddress(String(long.dropLast())))
        let fd = try FileDescriptor.unixStreamSocket()
        defer { try? fd.close() }
        XCTAssertEqual(thrownErrno { try fd.connect(unixPath: long) }, .nameTooLong)
    }

    func testGatheredSendArrivesInOrderAndAGonePeerIsABrokenPipe() throws {
        let (a, b) = try FileDescriptor.unixStreamPair()
        defer { try? a.close() }
        let head = Array("head:".utf8), body = Array("body".utf8)
        let sent = try head.withUnsafeBytes { h in try body.withUnsafeBytes { try a.send(h, $0) } }
        XCTAssertEqual(sent, 9)
        var got = [UInt8](repeating: 0, count: 9)
        XCTAssertEqual(try got.withUnsafeMutableBytes { try b.readAll(into: $0) }, 9)
        XCTAssertEqual(String(decoding: got, as: UTF8.self), "head:body")

        try b.close()
        // MSG_NOSIGNAL: an error, not a SIGPIPE that ends the test process.
        XCTAssertEqual(thrownErrno { try head.withUnsafeBytes { try a.sendAll($0) } }, .brokenPipe)
    }
}
