import Foundation
import KeychainTestSupport
import XCTest

/// A write through the mount is stored at close, once, and never by a writer a signal killed
/// (PRODUCT 12): until then readers of the mount and of the CLI see the old secret.
final class MountAtomicWriteTests: MountTestCase {
    /// Runs a Python program with `path` as its argument; its result.
    func python(_ program: String, _ path: String) throws -> ProgramResult {
        try runProgram(["/usr/bin/python3", "-c", program, path])
    }

    func testAWriterKilledBeforeItsCloseLeavesTheOldSecret() throws {
        try add("svc", "acct", "the old secret")
        let mnt = try mount()
        let path = mnt + "/svc/acct"
        // Open with O_TRUNC, write half of a new secret, die by SIGKILL with the file open.
        let killed = try python("""
            import os, sys
            fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
            os.write(fd, b"half of a new")
            os.kill(os.getpid(), 9)
            """, path)
        XCTAssertEqual(killed.status, SIGKILL, "the writer dies by SIGKILL: \(killed)")
        XCTAssertEqual(FS.read(path).bytes, Array("the old secret".utf8), "through the mount")
        XCTAssertEqual(try secret("svc", "acct"), "the old secret", "through the CLI")
        // Killed right after the open, nothing written: not emptied either.
        let opened = try python("import os, sys; os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC); os.kill(os.getpid(), 9)", path)
        XCTAssertEqual(opened.status, SIGKILL, "\(opened)")
        XCTAssertEqual(try secret("svc", "acct"), "the old secret")
        // A new file whose writer is killed leaves no item.
        let created = try python("""
            import os, sys
            fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, b"never stored")
            os.kill(os.getpid(), 9)
            """, mnt + "/svc/fresh")
        XCTAssertEqual(created.status, SIGKILL, "\(created)")
        XCTAssertEqual(try find("svc", "fresh").status, 44, "no item")
        assertErrno(FS.stat(mnt + "/svc/fresh").errno, ENOENT, "no file")
    }

    func testReadersSeeTheOldSecretWhileAWriterHoldsTheFile() throws {
        try add("svc", "acct", "version one")
        let mnt = try mount()
        let path = mnt + "/svc/acct"
        let fd = open(path, O_WRONLY | O_TRUNC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(Glibc.write(fd, "version two", 11), 11)
        XCTAssertEqual(FS.read(path).bytes, Array("version one".utf8), "another descriptor reads the old version")
        XCTAssertEqual(try secret("svc", "acct"), "version one", "so does the CLI")
        XCTAssertEqual(FS.stat(path).st.map { Int($0.st_size) }, 11, "and stat its size")
        XCTAssertEqual(close(fd), 0)
        XCTAssertEqual(try secret("svc", "acct"), "version two", "stored at the close")
        XCTAssertEqual(FS.read(path).bytes, Array("version two".utf8))
        // A new file shows (empty) to stat while its writer holds it, and is stored at the close.
        let nfd = open(mnt + "/svc/new", O_WRONLY | O_CREAT | O_EXCL, 0o600)
        XCTAssertGreaterThanOrEqual(nfd, 0)
        XCTAssertEqual(Glibc.write(nfd, "abc", 3), 3)
        XCTAssertEqual(FS.stat(mnt + "/svc/new").st.map { Int($0.st_size) }, 3)
        var st = stat()
        XCTAssertEqual(fstat(nfd, &st), 0, "fstat of a file not stored yet")
        XCTAssertEqual(try find("svc", "new").status, 44, "not stored before the close")
        assertErrno(FS.write(mnt + "/svc/new", Array("x".utf8), flags: O_WRONLY | O_CREAT | O_EXCL), EEXIST, "O_EXCL while pending")
        XCTAssertEqual(close(nfd), 0)
        XCTAssertEqual(try secret("svc", "new"), "abc")
    }

    func testANormalExitWithTheFileOpenStoresAndEmptyingStoresOnce() throws {
        try add("svc", "acct", "before")
        let mnt = try mount()
        let path = mnt + "/svc/acct"
        let exited = try python("""
            import os, sys
            fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
            os.write(fd, b"after exit")
            os._exit(0)
            """, path)
        XCTAssertEqual(exited.status, 0, "\(exited)")
        XCTAssertEqual(try secret("svc", "acct"), "after exit", "exit(0) with the descriptor open stores")

        let (watch, out) = try startWatch()
        defer { watch.terminate(); watch.waitUntilExit() }
        // `: > file`: an O_TRUNC open and a close, nothing written: stores the empty secret, once.
        XCTAssertEqual(try runProgram(["/bin/bash", "-c", ": > \"$0\"", path]).status, 0)
        XCTAssertTrue(h.waitUntil(3) { events(out).count >= 1 })
        XCTAssertEqual(try find("svc", "acct").stdout, "\n", "an empty secret")
        XCTAssertEqual(FS.stat(path).st.map { Int($0.st_size) }, 0)
        // `echo new > file`: bash closes a dup'd descriptor before writing; one change all the same.
        XCTAssertEqual(try runProgram(["/bin/bash", "-c", "echo new > \"$0\"", path]).status, 0)
        XCTAssertTrue(h.waitUntil(3) { events(out).count >= 2 })
        XCTAssertEqual(try secret("svc", "acct"), "new\n")
        usleep(500_000)  // room for a change that should not come
        XCTAssertEqual(events(out), ["update svc/acct", "update svc/acct"], "one event per command")
    }

    /// `keychainfs watch` in the background, writing to a file of the scratch directory.
    func startWatch() throws -> (Process, String) {
        let out = h.dir + "/watch.out"
        XCTAssertTrue(FileManager.default.createFile(atPath: out, contents: nil))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLIHarness.binary)
        p.arguments = ["watch", "-s", "svc"]
        p.environment = h.environment
        p.standardOutput = FileHandle(forWritingAtPath: out)
        p.standardError = FileHandle.nullDevice
        try p.run()
        usleep(300_000)  // until the daemon has the watcher
        return (p, out)
    }

    /// The watch lines without their time: `EVENT SERVICE/ACCOUNT`.
    func events(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n")
            .map { $0.split(separator: " ").suffix(2).joined(separator: " ") }
    }
}
