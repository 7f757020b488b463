import Glibc
import KeychainSystem
import XCTest

final class FileDescriptorTests: XCTestCase {
    private var scratch: ScratchDirectory!

    override func setUpWithError() throws { scratch = try ScratchDirectory() }
    override func tearDown() { scratch?.remove() }

    func testOpeningAMissingFileIsNoSuchFile() {
        XCTAssertEqual(thrownErrno { try FileDescriptor.open(scratch.file("missing"), .readOnly) }, .noSuchFile)
        // And a catch can name it.
        do {
            _ = try FileDescriptor.open(scratch.file("missing"), .readOnly)
            XCTFail("opened a missing file")
        } catch Errno.noSuchFile {
        } catch {
            XCTFail("\(error)")
        }
    }

    func testExclusiveCreateOfAnExistingFileIsFileExists() throws {
        let path = scratch.file("once")
        let fd = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate], permissions: .ownerReadWrite)
        try fd.close()
        XCTAssertEqual(thrownErrno { try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate]) }, .fileExists)
    }

    func testNoFollowRefusesASymbolicLink() throws {
        try Data("x".utf8).write(to: URL(fileURLWithPath: scratch.file("target")))
        XCTAssertEqual(symlink(scratch.file("target"), scratch.file("link")), 0)
        XCTAssertEqual(thrownErrno { try FileDescriptor.open(scratch.file("link"), .readOnly, options: .noFollow) }, .tooManySymbolicLinks)
        try FileDescriptor.open(scratch.file("link"), .readOnly).close()  // followed without it
    }

    func testSyncedBytesReadBackWithTheirStatus() throws {
        let path = scratch.file("data")
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let out = try FileDescriptor.open(path, .writeOnly, options: [.create, .truncate], permissions: .ownerReadWrite)
        try bytes.withUnsafeBytes { try out.writeAll($0) }
        try out.sync()
        try out.close()

        let fd = try FileDescriptor.open(path, .readOnly)
        defer { try? fd.close() }
        let status = try fd.status()
        XCTAssertEqual(status.kind, .regular)
        XCTAssertEqual(status.size, Int64(bytes.count))
        XCTAssertEqual(status.permissions, .ownerReadWrite)
        XCTAssertEqual(status.owner, geteuid())
        XCTAssertEqual(status.permissions.description, "0600")
        var back = [UInt8](repeating: 0, count: bytes.count + 1)
        XCTAssertEqual(try back.withUnsafeMutableBytes { try fd.readAll(into: $0) }, bytes.count)
        XCTAssertEqual(Array(back.prefix(bytes.count)), bytes)
    }

    func testSeekAndPositionalReads() throws {
        let path = scratch.file("text")
        try Data("0123456789".utf8).write(to: URL(fileURLWithPath: path))
        let fd = try FileDescriptor.open(path, .readOnly)
        defer { try? fd.close() }
        XCTAssertEqual(try fd.seek(offset: 0, from: .end), 10)
        var tail = [UInt8](repeating: 0, count: 3)
        XCTAssertEqual(try tail.withUnsafeMutableBytes { try fd.read(fromAbsoluteOffset: 7, into: $0) }, 3)
        XCTAssertEqual(String(decoding: tail, as: UTF8.self), "789")
        XCTAssertEqual(try tail.withUnsafeMutableBytes { try fd.read(into: $0) }, 0)  // still at the end
        XCTAssertEqual(try fd.seek(offset: 2, from: .start), 2)
        XCTAssertEqual(try fd.readToEnd(limit: 5), Array("23456".utf8))
    }

    func testAppendedWritesLandAtTheEndAndTruncateCutsThem() throws {
        let path = scratch.file("log")
        try Data("first\n".utf8).write(to: URL(fileURLWithPath: path))
        let fd = try FileDescriptor.open(path, .writeOnly, options: [.append, .noFollow])
        defer { try? fd.close() }
        try fd.seek(offset: 0, from: .start)  // O_APPEND writes at the end wherever the position is
        XCTAssertEqual(try Array("second\n".utf8).withUnsafeBytes { b in try Result { () throws(Errno) in try fd.write(b) }.get() }, 7)
        XCTAssertEqual(try FileSystem.contents(of: path, limit: 100), Array("first\nsecond\n".utf8))
        try fd.truncate(toLength: 6)
        XCTAssertEqual(try fd.status().size, 6)
        XCTAssertEqual(try FileSystem.contents(of: path, limit: 100), Array("first\n".utf8))
        let readOnly = try FileDescriptor.open(path, .readOnly)
        defer { try? readOnly.close() }
        XCTAssertEqual(thrownErrno { try readOnly.truncate(toLength: 0) }, .invalidArgument, "not open for writing")
        XCTAssertEqual(thrownErrno { try [UInt8]([1]).withUnsafeBytes { b in try Result { () throws(Errno) in try readOnly.write(b) }.get() } },
                       .badDescriptor)
    }

    func testOpenedDescriptorsAreCloseOnExec() throws {
        let fd = try FileDescriptor.open("/dev/null", .readWrite)
        defer { try? fd.close() }
        XCTAssertNotEqual(fcntl(fd.rawValue, F_GETFD) & FD_CLOEXEC, 0)
    }

    func testAPipesEndsAreCloseOnExecAndCarryBytesThenTheEnd() throws {
        let (read, write) = try FileDescriptor.pipe()
        defer { try? read.close() }
        XCTAssertNotEqual(fcntl(read.rawValue, F_GETFD) & FD_CLOEXEC, 0)
        XCTAssertNotEqual(fcntl(write.rawValue, F_GETFD) & FD_CLOEXEC, 0)
        XCTAssertFalse(try read.waitUntilReadable(timeoutMilliseconds: 0), "nothing written yet")
        try [UInt8]([49]).withUnsafeBytes { b in try Result { () throws(Errno) in try write.writeAll(b) }.get() }
        try write.close()
        var got = [UInt8](repeating: 0, count: 4)
        XCTAssertEqual(try got.withUnsafeMutableBytes { b in try Result { () throws(Errno) in try read.read(into: b) }.get() }, 1)
        XCTAssertEqual(got[0], 49)
        XCTAssertTrue(try read.waitUntilReadable(timeoutMilliseconds: 0), "the end of the stream is readable")
        XCTAssertEqual(try got.withUnsafeMutableBytes { b in try Result { () throws(Errno) in try read.read(into: b) }.get() }, 0)
    }

    func testPermissionsAreSetOnTheOpenFile() throws {
        let fd = try FileDescriptor.open(scratch.file("mode"), .writeOnly, options: .create, permissions: .ownerReadWrite)
        defer { try? fd.close() }
        try fd.setPermissions([.ownerRead, .groupRead])
        XCTAssertEqual(try fd.status().permissions.rawValue, 0o440)
        XCTAssertEqual(try FileSystem.status(of: scratch.file("mode")).permissions.rawValue, 0o440)
    }

    func testASharedLockWaitsForAnExclusiveHolder() throws {
        let path = scratch.file("lock")
        let holder = try FileDescriptor.open(path, .readWrite, options: .create, permissions: .ownerReadWrite)
        defer { try? holder.close() }
        let other = try FileDescriptor.open(path, .readOnly)
        defer { try? other.close() }
        XCTAssertEqual(flock(holder.rawValue, LOCK_EX), 0)
        XCTAssertFalse(try other.tryLockShared())
        XCTAssertEqual(flock(holder.rawValue, LOCK_UN), 0)
        XCTAssertTrue(try other.tryLockShared())
        try other.unlock()
    }

    func testAnExclusiveLockIsRefusedWhileAnyOtherIsHeld() throws {
        let path = scratch.file("lock")
        let first = try FileDescriptor.open(path, .readWrite, options: .create, permissions: .ownerReadWrite)
        defer { try? first.close() }
        let second = try FileDescriptor.open(path, .readOnly)
        defer { try? second.close() }
        XCTAssertTrue(try first.tryLockExclusive())
        XCTAssertFalse(try second.tryLockExclusive())
        XCTAssertFalse(try second.tryLockShared())
        try first.unlock()
        XCTAssertTrue(try second.tryLockShared())
        XCTAssertFalse(try first.tryLockExclusive())  // a shared holder keeps it out too
        try second.unlock()
        XCTAssertTrue(try first.tryLockExclusive())
        try first.unlock()
    }

    func testClosingTwiceIsABadDescriptor() throws {
        let fd = try FileDescriptor.open("/dev/null", .readOnly)
        try fd.close()
        XCTAssertEqual(thrownErrno { try fd.close() }, .badDescriptor)
    }

    func testCloseAfterClosesWhenTheBodyThrows() throws {
        let fd = try FileDescriptor.open("/dev/null", .readOnly)
        XCTAssertEqual(thrownErrno { try fd.closeAfter { () throws(Errno) in throw Errno.ioError } }, .ioError)
        XCTAssertEqual(fcntl(fd.rawValue, F_GETFD), -1)  // closed
    }
}
