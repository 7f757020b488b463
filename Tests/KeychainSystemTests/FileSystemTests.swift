import Glibc
import KeychainSystem
import XCTest

final class FileSystemTests: XCTestCase {
    private var scratch: ScratchDirectory!

    override func setUpWithError() throws { scratch = try ScratchDirectory() }
    override func tearDown() { scratch?.remove() }

    func testStatusFollowsLinksUnlessAskedNotTo() throws {
        try Data("abc".utf8).write(to: URL(fileURLWithPath: scratch.file("file")))
        XCTAssertEqual(symlink("file", scratch.file("link")), 0)
        XCTAssertEqual(try FileSystem.status(of: scratch.file("link")).kind, .regular)
        XCTAssertEqual(try FileSystem.status(of: scratch.file("link")).size, 3)
        XCTAssertEqual(try FileSystem.status(of: scratch.file("link"), followingLinks: false).kind, .symbolicLink)
        XCTAssertEqual(try FileSystem.status(of: scratch.path).kind, .directory)
        XCTAssertEqual(try FileSystem.status(of: "/dev/null").kind, .characterDevice)
        XCTAssertEqual(try FileSystem.destination(ofLink: scratch.file("link")), "file")
        XCTAssertEqual(thrownErrno { try FileSystem.status(of: scratch.file("missing")) }, .noSuchFile)
        XCTAssertEqual(thrownErrno { try FileSystem.destination(ofLink: scratch.file("file")) }, .invalidArgument)
    }

    func testDirectoriesAreMadeOnceAndListed() throws {
        try FileSystem.createDirectory(scratch.file("d"), permissions: [.ownerRead, .ownerWrite, .ownerExecute])
        XCTAssertEqual(thrownErrno { try FileSystem.createDirectory(scratch.file("d"), permissions: .ownerReadWrite) }, .fileExists)
        XCTAssertEqual(try FileSystem.status(of: scratch.file("d")).permissions.rawValue, 0o700)
        try Data().write(to: URL(fileURLWithPath: scratch.file("d/a")))
        try Data().write(to: URL(fileURLWithPath: scratch.file("d/b.sock")))
        XCTAssertEqual(try FileSystem.entries(of: scratch.file("d")).sorted(), ["a", "b.sock"])
        XCTAssertEqual(thrownErrno { try FileSystem.entries(of: scratch.file("d/a")) }, .notDirectory)
    }

    func testTwoNamesOfOneFileAreTheSameFileAndACopyIsNot() throws {
        try Data("abc".utf8).write(to: URL(fileURLWithPath: scratch.file("a")))
        try FileSystem.link(scratch.file("a"), as: scratch.file("b"))
        try Data("abc".utf8).write(to: URL(fileURLWithPath: scratch.file("c")))
        let a = try FileSystem.status(of: scratch.file("a"))
        XCTAssertTrue(a.isSameFile(as: try FileSystem.status(of: scratch.file("b"))))
        XCTAssertFalse(a.isSameFile(as: try FileSystem.status(of: scratch.file("c"))))
        let fd = try FileDescriptor.open(scratch.file("b"), .readOnly)
        defer { try? fd.close() }
        XCTAssertTrue(a.isSameFile(as: try fd.status()), "fstat names the same inode")
        XCTAssertEqual(thrownErrno { try FileSystem.link(scratch.file("a"), as: scratch.file("c")) }, .fileExists)
    }

    func testRenameRemoveAndExists() throws {
        try Data("new".utf8).write(to: URL(fileURLWithPath: scratch.file("new")))
        try Data("old".utf8).write(to: URL(fileURLWithPath: scratch.file("old")))
        try FileSystem.rename(scratch.file("new"), to: scratch.file("old"))
        XCTAssertFalse(FileSystem.exists(scratch.file("new")))
        XCTAssertEqual(try FileSystem.contents(of: scratch.file("old"), limit: 100), Array("new".utf8))
        try FileSystem.remove(scratch.file("old"))
        XCTAssertFalse(FileSystem.exists(scratch.file("old")))
        XCTAssertEqual(thrownErrno { try FileSystem.remove(scratch.file("old")) }, .noSuchFile)
    }

    func testAccessIsCheckedForTheRealUser() throws {
        let file = scratch.file("file")
        try Data("abc".utf8).write(to: URL(fileURLWithPath: file))
        try FileSystem.setPermissions(of: file, to: .ownerReadWrite)
        XCTAssertTrue(FileSystem.isAccessible(file, for: .read))
        XCTAssertTrue(FileSystem.isAccessible(file, for: [.read, .write]))
        XCTAssertFalse(FileSystem.isAccessible(file, for: .execute))  // no execute bit: not even for root
        XCTAssertFalse(FileSystem.isAccessible(file, for: [.read, .execute]))
        try FileSystem.setPermissions(of: file, to: [.ownerRead, .ownerWrite, .ownerExecute])
        XCTAssertTrue(FileSystem.isAccessible(file, for: [.read, .write, .execute]))
        if getuid() != 0 {
            try FileSystem.setPermissions(of: file, to: [])
            XCTAssertFalse(FileSystem.isAccessible(file, for: .read))
        }
        XCTAssertFalse(FileSystem.isAccessible(scratch.file("missing"), for: .read))
    }

    func testALinkGivesAFurtherNameAndNeverReplacesOne() throws {
        try Data("key".utf8).write(to: URL(fileURLWithPath: scratch.file("a")))
        try Data("other".utf8).write(to: URL(fileURLWithPath: scratch.file("taken")))
        try FileSystem.link(scratch.file("a"), as: scratch.file("b"))
        try FileSystem.remove(scratch.file("a"))
        XCTAssertEqual(try FileSystem.contents(of: scratch.file("b"), limit: 100), Array("key".utf8))
        XCTAssertEqual(thrownErrno { try FileSystem.link(scratch.file("b"), as: scratch.file("taken")) }, .fileExists)
        XCTAssertEqual(try FileSystem.contents(of: scratch.file("taken"), limit: 100), Array("other".utf8))
        XCTAssertEqual(thrownErrno { try FileSystem.link(scratch.file("a"), as: scratch.file("c")) }, .noSuchFile)
    }

    func testCanonicalPathsHaveNoLinks() throws {
        try FileSystem.createDirectory(scratch.file("real"), permissions: [.ownerRead, .ownerWrite, .ownerExecute])
        XCTAssertEqual(symlink(scratch.file("real"), scratch.file("alias")), 0)
        let real = try FileSystem.canonicalPath(scratch.file("real"))
        XCTAssertEqual(try FileSystem.canonicalPath(scratch.file("alias") + "/../alias/."), real)
        XCTAssertTrue(real.hasPrefix("/") && !real.contains("/../"))
        XCTAssertEqual(thrownErrno { try FileSystem.canonicalPath(scratch.file("missing")) }, .noSuchFile)
    }

    func testTemporaryFilesArePrivateAndNew() throws {
        let (fd, path) = try FileSystem.makeTemporaryFile(prefix: scratch.file(".backup."))
        let (fd2, path2) = try FileSystem.makeTemporaryFile(prefix: scratch.file(".backup."))
        try fd.close()
        try fd2.close()
        XCTAssertNotEqual(path, path2)
        XCTAssertTrue(path.hasPrefix(scratch.file(".backup.")) && path.count == scratch.file(".backup.").count + 6)
        XCTAssertEqual(try FileSystem.status(of: path).permissions, .ownerReadWrite)
        XCTAssertEqual(thrownErrno { try FileSystem.makeTemporaryFile(prefix: scratch.file("missing/x.")) }, .noSuchFile)
    }

    func testContentsStopAtTheLimitAndReadProcFiles() throws {
        try Data("0123456789".utf8).write(to: URL(fileURLWithPath: scratch.file("ten")))
        XCTAssertEqual(try FileSystem.contents(of: scratch.file("ten"), limit: 4), Array("0123".utf8))
        // /proc files say size 0 and are read to their end.
        let mounts = String(decoding: try FileSystem.contents(of: "/proc/self/mountinfo", limit: 1 << 20), as: UTF8.self)
        XCTAssertTrue(mounts.contains(" / "))
        XCTAssertEqual(thrownErrno { try FileSystem.contents(of: scratch.file("missing"), limit: 1) }, .noSuchFile)
    }

    func testPermissionsByPathAndFileSystemStatus() throws {
        try Data().write(to: URL(fileURLWithPath: scratch.file("f")))
        try FileSystem.setPermissions(of: scratch.file("f"), to: [.ownerRead, .ownerExecute])
        let status = try FileSystem.status(of: scratch.file("f"))
        XCTAssertEqual(status.permissions.rawValue, 0o500)
        XCTAssertTrue(status.isExecutableFile)
        XCTAssertFalse(try FileSystem.status(of: scratch.path).isExecutableFile)  // a directory
        try FileSystem.checkFileSystem(at: scratch.path)
        XCTAssertEqual(thrownErrno { try FileSystem.checkFileSystem(at: scratch.file("missing")) }, .noSuchFile)
    }
}
