import Dispatch
import Glibc
import KeychainSystem
import XCTest

/// Counts SIGUSR1 deliveries; a plain C handler cannot capture context.
nonisolated(unsafe) private var interruptions: Int32 = 0

final class SystemCallTests: XCTestCase {
    func testErrnoPrintsTheCLibrarysSentence() {
        XCTAssertEqual(Errno.noSpace.description, "No space left on device")
        XCTAssertEqual(Errno(rawValue: ENOENT), .noSuchFile)
        XCTAssertEqual(Errno(KeychainTestError()), .ioError)
        XCTAssertEqual(Errno(Errno.permissionDenied as any Error), .permissionDenied)
    }

    /// A read blocked on an empty pipe is interrupted by a signal whose handler does not ask
    /// for restarts; the retry loop reads the bytes that arrive after it.
    func testAnInterruptedReadIsRepeated() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions += 1 }
        action.sa_flags = 0  // no SA_RESTART: the blocked read returns EINTR
        var previous = sigaction()
        XCTAssertEqual(sigaction(SIGUSR1, &action, &previous), 0)
        defer { sigaction(SIGUSR1, &previous, nil) }
        var pipeEnds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipeEnds), 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }

        let reader = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var readerThread = pthread_t()
        nonisolated(unsafe) var got: [UInt8] = []
        let readFD = pipeEnds[0]
        Thread.detachNewThread {
            readerThread = pthread_self()
            reader.signal()
            var buffer = [UInt8](repeating: 0, count: 5)
            let n = (try? buffer.withUnsafeMutableBytes { try Descriptor.readAll(into: $0, from: readFD) }) ?? -1
            got = Array(buffer.prefix(max(n, 0)))
            reader.signal()
        }
        reader.wait()
        usleep(100_000)  // let it block in read
        pthread_kill(readerThread, SIGUSR1)
        usleep(100_000)
        try Array("hello".utf8).withUnsafeBytes { try Descriptor.writeAll($0, to: pipeEnds[1]) }
        XCTAssertEqual(reader.wait(timeout: .now() + 10), .success)
        XCTAssertGreaterThan(interruptions, 0)
        XCTAssertEqual(String(decoding: got, as: UTF8.self), "hello")
    }

    func testWholeBuffersCrossAPipeLargerThanItsCapacity() throws {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]) }
        let sent = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let writeFD = ends[1]
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? sent.withUnsafeBytes { try Descriptor.writeAll($0, to: writeFD) }
            close(writeFD)
            done.signal()
        }
        var received = [UInt8](repeating: 0, count: sent.count + 10)
        let n = try received.withUnsafeMutableBytes { try Descriptor.readAll(into: $0, from: ends[0]) }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(n, sent.count)  // stopped at the end of the stream, not at the buffer's end
        XCTAssertEqual(Array(received.prefix(n)), sent)
    }

    func testAFailedCallThrowsItsErrno() {
        XCTAssertThrowsError(try systemCall { open("/nonexistent-keychainfs-path", O_RDONLY) }) {
            XCTAssertEqual($0 as? Errno, .noSuchFile)
        }
        var byte: UInt8 = 0
        XCTAssertThrowsError(try withUnsafeMutableBytes(of: &byte) { try Descriptor.readSome(into: $0, from: -1) }) {
            XCTAssertEqual($0 as? Errno, Errno(rawValue: EBADF))
        }
    }

    func testAChildsExitCodeAndSignalAreReported() throws {
        XCTAssertEqual(try run(["/bin/sh", "-c", "exit 3"]), 3)
        XCTAssertEqual(try run(["/bin/sh", "-c", "kill -9 $$"]), 128 + 9)
        XCTAssertNil(ChildProcess.waitForExit(getpid()))  // not a child
    }

    func testNewSessionFlagStartsALeader() throws {
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        XCTAssertEqual(posix_spawnattr_setflags(&attr, ChildProcess.newSessionFlag), 0)
        // The child is a session leader when its session id is its own pid.
        let status = try run(["/bin/sh", "-c", "test \"$(ps -o sid= -p $$ | tr -d ' ')\" = \"$$\""], attributes: &attr)
        XCTAssertEqual(status, 0)
    }

    private func run(_ argv: [String], attributes: UnsafeMutablePointer<posix_spawnattr_t>? = nil) throws -> Int32 {
        var args = argv.map { strdup($0) } + [nil]
        defer { for p in args { free(p) } }
        var pid: pid_t = 0
        XCTAssertEqual(posix_spawn(&pid, argv[0], nil, attributes, &args, environ), 0)
        let status = try XCTUnwrap(ChildProcess.waitForExit(pid))
        return ChildProcess.exitCode(status)
    }
}

private struct KeychainTestError: Error {}
