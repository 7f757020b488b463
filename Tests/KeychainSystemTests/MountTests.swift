import Glibc
import KeychainSystem
import XCTest

final class MountTests: XCTestCase {
    private var scratch: ScratchDirectory!

    override func setUpWithError() throws {
        try XCTSkipUnless(geteuid() == 0, "mount(2) needs root")
        scratch = try ScratchDirectory()
    }

    override func tearDown() {
        guard let scratch else { return }
        try? Mount.unmount(scratch.path, detach: true)
        scratch.remove()
    }

    func testAReadOnlyMountRefusesWritesAndUnmounts() throws {
        try Mount.mount(source: "keychainfs-test", at: scratch.path, type: "tmpfs", flags: [.readOnly, .noSetUserID, .noDevices],
                        data: "size=64k")
        let point = try FileSystem.canonicalPath(scratch.path)
        let table = String(decoding: try FileSystem.contents(of: "/proc/self/mountinfo", limit: 1 << 20), as: UTF8.self)
        XCTAssertTrue(table.split(separator: "\n").contains { $0.contains(" \(point) ") && $0.contains(" tmpfs keychainfs-test ") })
        XCTAssertEqual(thrownErrno { try FileDescriptor.open(scratch.file("x"), .writeOnly, options: .create, permissions: .ownerReadWrite) },
                       .readOnlyFileSystem)
        try Mount.unmount(scratch.path, detach: false)
        XCTAssertEqual(thrownErrno { try Mount.unmount(scratch.path, detach: false) }, .invalidArgument)  // not a mount point
        XCTAssertEqual(thrownErrno { try Mount.mount(source: "x", at: scratch.file("missing"), type: "tmpfs", flags: [], data: "") },
                       .noSuchFile)
    }
}
