import Foundation
import KeychainTestSupport
import XCTest

/// The largest secret (16 MiB, ItemLimits) is the same through the mount and the socket, and
/// the locked memory that files open for writing hold is bounded (PRODUCT 11).
final class MountSizeLimitTests: MountTestCase {
    static let limit = 16 << 20

    func testSixteenMiBWrittenThroughTheMountReadsBackThroughTheSocketAndMoreIsRefused() throws {
        let mnt = try mount()
        try add("big", "f", "small")
        let bytes = [UInt8]((0..<Self.limit).map { UInt8(ascii: "a") + UInt8($0 % 26) })
        assertErrno(FS.write(mnt + "/big/f", bytes), FS.ok, "a 16 MiB write")
        let read = try h.run(["find-generic-password", "-s", "big", "-a", "f", "-w"], timeout: 60)
        XCTAssertEqual(read.status, 0, read.stderr)
        XCTAssertEqual(read.stdout.utf8.count, Self.limit + 1)
        XCTAssertTrue(read.stdout == String(decoding: bytes, as: UTF8.self) + "\n", "the same bytes back through the socket")

        // One byte more: refused by the mount, at the write and at a truncate.
        let fd = open(mnt + "/big/g", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(pwrite(fd, "x", 1, off_t(Self.limit)), -1)
        assertErrno(errno, EFBIG, "a write past 16 MiB")
        XCTAssertEqual(ftruncate(fd, off_t(Self.limit + 1)), -1)
        assertErrno(errno, EFBIG, "a truncate past 16 MiB")
        close(fd)
        // And by the engine, through the socket.
        let over = try h.run(["add-generic-password", "-s", "over", "-a", "a", "-w", "-"],
                             inputData: Data(repeating: UInt8(ascii: "z"), count: Self.limit + 1) + Data([0x0A]), timeout: 60)
        XCTAssertNotEqual(over.status, 0, "an add past 16 MiB is refused")
        XCTAssertTrue(over.stderr.contains("One or more parameters passed to a function were not valid."), over.stderr)
        XCTAssertEqual(try find("over", "a").status, 44, "nothing was stored")
        XCTAssertEqual(try secret("big", "f")?.utf8.count, Self.limit, "the stored item is untouched")
    }

    /// VmLck of the daemon, in bytes.
    func lockedMemory() throws -> Int {
        guard let pid = try h.daemonPID() else { XCTFail("no daemon"); return 0 }
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmLck:") }),
              let kb = Int(line.split(separator: " ")[1]) else { return 0 }
        return kb << 10
    }

    func testSparseWritesOfOneUserLockABoundedAmountOfMemory() throws {
        let mnt = try mount()
        try add("sparse", "seed", "x")
        let before = try lockedMemory()
        var fds: [Int32] = []
        var outcomes: [Int32] = []
        for i in 0..<6 {
            let fd = open(mnt + "/sparse/f\(i)", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            XCTAssertGreaterThanOrEqual(fd, 0)
            fds.append(fd)
            outcomes.append(pwrite(fd, "x", 1, off_t(Self.limit - 1)) == 1 ? FS.ok : errno)
        }
        XCTAssertEqual(outcomes, [FS.ok, FS.ok, ENOSPC, ENOSPC, ENOSPC, ENOSPC], "two 16 MiB files per uid, then ENOSPC")
        let held = try lockedMemory() - before
        XCTAssertLessThan(held, 3 * Self.limit, "locked memory held by the writers: \(held >> 20) MiB")
        // A closed file gives its room back (the kernel sends the release just after close returns).
        XCTAssertEqual(close(fds[0]), 0)
        XCTAssertTrue(h.waitUntil(2) { pwrite(fds[2], "x", 1, off_t(Self.limit - 1)) == 1 }, "room again after a close")
        for fd in fds.dropFirst() { close(fd) }
        XCTAssertEqual(FS.stat(mnt + "/sparse/f2").st?.st_size, off_t(Self.limit))
    }
}
