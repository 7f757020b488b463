import Foundation
import XCTest

/// Filesystem calls as a user's program makes them (Glibc), each answering with its value or
/// with the errno the kernel gave: what `ls -l`, `cat`, `stat` and `getfattr` see.
package enum FS {
    /// An errno that is not one: the call succeeded.
    package static let ok: Int32 = 0

    /// `cat PATH`: open, read to the end, close.
    package static func read(_ path: String) -> (bytes: [UInt8]?, errno: Int32) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return (nil, errno) }
        defer { close(fd) }
        return readAll(fd)
    }

    /// Reads `fd` from its current offset to the end, `chunk` bytes per call.
    package static func readAll(_ fd: Int32, chunk: Int = 4096) -> (bytes: [UInt8]?, errno: Int32) {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: chunk)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, chunk) }
            if n < 0 { return (nil, errno) }
            if n == 0 { return (out, ok) }
            out += buf[0..<n]
        }
    }

    /// One `pread` of up to `count` bytes at `offset`.
    package static func pread(_ fd: Int32, count: Int, offset: Int) -> (bytes: [UInt8]?, errno: Int32) {
        var buf = [UInt8](repeating: 0, count: count)
        let n = buf.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, count, off_t(offset)) }
        if n < 0 { return (nil, errno) }
        return (Array(buf[0..<n]), ok)
    }

    /// `echo -n BYTES > PATH`: open with O_WRONLY|O_CREAT|O_TRUNC (or `flags`), write, close.
    /// The errno of the first call that failed, or 0.
    @discardableResult
    package static func write(_ path: String, _ bytes: [UInt8], flags: Int32 = O_WRONLY | O_CREAT | O_TRUNC) -> Int32 {
        let fd = open(path, flags, 0o600)
        guard fd >= 0 else { return errno }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 {
                let e = errno
                close(fd)
                return e
            }
            done += n
        }
        return close(fd) == 0 ? ok : errno
    }

    package static func write(_ path: String, _ text: String) -> Int32 { write(path, Array(text.utf8)) }

    package static func stat(_ path: String) -> (st: Glibc.stat?, errno: Int32) {
        var st = Glibc.stat()
        return statPath(path, &st) == 0 ? (st, ok) : (nil, errno)
    }

    /// The names `readdir` gives, without `.` and `..`, in the order given.
    package static func list(_ path: String) -> (names: [String]?, errno: Int32) {
        guard let dir = opendir(path) else { return (nil, errno) }
        defer { closedir(dir) }
        var names: [String] = []
        errno = 0
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return errno == 0 ? (names, ok) : (nil, errno)
    }

    /// Calls that return 0 or -1 with errno: the errno, or 0.
    package static func check(_ result: Int32) -> Int32 { result == 0 ? ok : errno }

    // getxattr(2) and listxattr(2) are not in Swift's Glibc module; take them from libc.
    private typealias GetXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int
    private typealias ListXattr = @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, Int) -> Int
    private typealias SetXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32
    private static func libc<T>(_ name: String, as: T.Type) -> T {
        unsafeBitCast(dlsym(dlopen(nil, RTLD_NOW), name)!, to: T.self)
    }

    /// `getfattr -n NAME PATH`: the value's bytes, or the errno (ENODATA when absent).
    package static func getxattr(_ path: String, _ name: String) -> (value: [UInt8]?, errno: Int32) {
        let f = libc("getxattr", as: GetXattr.self)
        let size = f(path, name, nil, 0)
        guard size >= 0 else { return (nil, errno) }
        var buf = [UInt8](repeating: 0, count: size + 1)
        let n = buf.withUnsafeMutableBytes { f(path, name, $0.baseAddress, size + 1) }
        guard n >= 0 else { return (nil, errno) }
        return (Array(buf[0..<n]), ok)
    }

    /// The value as text, or nil.
    package static func xattr(_ path: String, _ name: String) -> String? {
        getxattr(path, name).value.map { String(decoding: $0, as: UTF8.self) }
    }

    /// `getfattr -d`'s list of names.
    package static func listxattr(_ path: String) -> (names: [String]?, errno: Int32) {
        let f = libc("listxattr", as: ListXattr.self)
        let size = f(path, nil, 0)
        guard size >= 0 else { return (nil, errno) }
        var buf = [CChar](repeating: 0, count: size + 1)
        let n = f(path, &buf, size + 1)
        guard n >= 0 else { return (nil, errno) }
        let names = buf[0..<n].split(separator: 0).map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return (names, ok)
    }

    package static func setxattr(_ path: String, _ name: String, _ value: String) -> Int32 {
        let f = libc("setxattr", as: SetXattr.self)
        let bytes = Array(value.utf8)
        return f(path, name, bytes, bytes.count, 0) == 0 ? ok : errno
    }

    /// The errno's name, for messages.
    package static func name(_ e: Int32) -> String {
        let names: [Int32: String] = [0: "OK", ENOENT: "ENOENT", EACCES: "EACCES", EPERM: "EPERM", EIO: "EIO",
                                      EROFS: "EROFS", EEXIST: "EEXIST", ENODATA: "ENODATA", EINVAL: "EINVAL",
                                      ENOTEMPTY: "ENOTEMPTY", EISDIR: "EISDIR", ENOTDIR: "ENOTDIR", EBADF: "EBADF"]
        return names[e] ?? "errno \(e)"
    }
}

/// stat(2), out of `FS` whose own `stat` hides it.
private func statPath(_ path: String, _ st: inout stat) -> Int32 { stat(path, &st) }

/// A program's result.
package struct ProgramResult: CustomStringConvertible {
    package var status: Int32
    package var stdout: [UInt8]
    package var stderr: String
    package var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    package var description: String { "status \(status), stdout \(stdoutText.debugDescription), stderr \(stderr.debugDescription)" }

    package init(status: Int32, stdout: [UInt8], stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Runs `argv` (no shell) and collects its output; a program still running after 30 s is killed.
package func runProgram(_ argv: [String], timeout: Double = 30) throws -> ProgramResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: argv[0])
    p.arguments = Array(argv.dropFirst())
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    let box = ProgramOutput()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
        box.set(err: err.fileHandleForReading.readDataToEndOfFile())
        group.leave()
    }
    group.enter()
    DispatchQueue.global().async {
        box.set(out: out.fileHandleForReading.readDataToEndOfFile())
        group.leave()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { usleep(10_000) }
    if p.isRunning {
        kill(p.processIdentifier, SIGKILL)
        XCTFail("\(argv) did not finish within \(timeout) s")
    }
    p.waitUntilExit()
    _ = group.wait(timeout: .now() + 10)
    return ProgramResult(status: p.terminationStatus, stdout: Array(box.out), stderr: String(decoding: box.err, as: UTF8.self))
}

private final class ProgramOutput: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var out = Data()
    private(set) var err = Data()
    package func set(out d: Data) { lock.lock(); out = d; lock.unlock() }
    package func set(err d: Data) { lock.lock(); err = d; lock.unlock() }
}

package struct MountFailed: Error, CustomStringConvertible {
    package var description: String

    package init(description: String) {
        self.description = description
    }
}

/// A test case with a harness vault that it mounts; tearDown always unmounts every mount it made
/// (`keychainfs unmount`, then `umount -l`) and stops the daemon, whether the test passed or not.
open class MountTestCase: XCTestCase {
    package var h: CLIHarness!
    package var mountpoints: [String] = []
    package let passphrase = "pass phrase 1"

    open override func setUpWithError() throws {
        try super.setUpWithError()
        guard getuid() == 0 else { throw XCTSkip("mounting needs root") }
        guard access("/dev/fuse", R_OK | W_OK) == 0 else { throw XCTSkip("no /dev/fuse") }
        h = try CLIHarness()
        try h.shareRuntimeDirectory()
        try h.createVault(passphrase: passphrase)
    }

    open override func tearDown() {
        for point in mountpoints.reversed() { forceUnmount(point) }
        h?.tearDown()
        for point in mountpoints where MountTestCase.isMounted(point) {
            XCTFail("\(point) is still mounted after tearDown")
        }
        h = nil
        super.tearDown()
    }

    /// Mounts the harness vault at a fresh directory of the scratch dir and returns its path.
    @discardableResult
    package func mount(_ options: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let point = h.dir + "/mnt\(mountpoints.count)"
        try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: false)
        chmod(point, 0o755)
        mountpoints.append(point)
        let r = try h.run(["mount"] + (options.map { ["-o", $0] } ?? []) + [point], timeout: 30, file: file, line: line)
        guard r.status == 0 else {
            XCTFail("mount \(options ?? ""): \(r)", file: file, line: line)
            throw MountFailed(description: "mount \(point): \(r)")
        }
        XCTAssertTrue(MountTestCase.isMounted(point), "mount returned before the mount was live", file: file, line: line)
        return point
    }

    /// Unmounts `point` through the CLI; true when it is gone.
    @discardableResult
    package func unmount(_ point: String, file: StaticString = #filePath, line: UInt = #line) throws -> Bool {
        let r = try h.run(["unmount", point], timeout: 20, file: file, line: line)
        XCTAssertEqual(r.status, 0, "unmount: \(r)", file: file, line: line)
        return !MountTestCase.isMounted(point)
    }

    /// Unmounts by every means there is; never fails the test by itself.
    package func forceUnmount(_ point: String) {
        guard MountTestCase.isMounted(point) else { return }
        if let h { _ = try? h.run(["unmount", point], timeout: 20) }
        if MountTestCase.isMounted(point) { _ = try? runProgram(["/bin/umount", "-l", point], timeout: 20) }
        if MountTestCase.isMounted(point) { umount2(point, Int32(MNT_DETACH)) }
    }

    /// True while /proc/mounts has a keychainfs mount at `point`.
    package static func isMounted(_ point: String) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { line in
            let f = line.split(separator: " ")
            return f.count > 2 && f[1] == point && f[2].hasPrefix("fuse")
        }
    }

    /// The mount's line in /proc/mounts.
    package static func mountLine(_ point: String) -> String? {
        guard let text = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.split(separator: " ").dropFirst().first.map(String.init) == point }.map(String.init)
    }

    /// Adds a generic password through the CLI and fails the test when it does not succeed.
    package func add(_ service: String, _ account: String, _ secret: String, _ extra: [String] = [],
             file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try h.run(["add-generic-password", "-s", service, "-a", account, "-w", secret] + extra, file: file, line: line)
        XCTAssertEqual(r.status, 0, "add \(service)/\(account): \(r)", file: file, line: line)
    }

    /// Adds an item whose secret is arbitrary bytes (through `-w -`, which drops one trailing newline).
    package func add(_ service: String, _ account: String, bytes: [UInt8], _ extra: [String] = [],
             file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try h.run(["add-generic-password", "-s", service, "-a", account, "-w", "-"] + extra,
                          inputData: Data(bytes + [0x0A]), file: file, line: line)
        XCTAssertEqual(r.status, 0, "add \(service)/\(account): \(r)", file: file, line: line)
    }

    /// `find-generic-password -s S -a A -w` as the CLI prints it.
    package func find(_ service: String, _ account: String, file: StaticString = #filePath, line: UInt = #line) throws -> CLIHarness.Result {
        try h.run(["find-generic-password", "-s", service, "-a", account, "-w"], file: file, line: line)
    }

    /// The secret the CLI reads for S/A, or nil with the exit status when it finds none.
    package func secret(_ service: String, _ account: String, file: StaticString = #filePath, line: UInt = #line) throws -> String? {
        let r = try find(service, account, file: file, line: line)
        guard r.status == 0, r.stdout.hasSuffix("\n") else { return nil }
        return String(r.stdout.dropLast())
    }

    /// The item's attributes from `find-generic-password --json`.
    package func attributes(_ service: String, _ account: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let r = try h.run(["find-generic-password", "-s", service, "-a", account, "--json"], file: file, line: line)
        XCTAssertEqual(r.status, 0, "find \(service)/\(account): \(r)", file: file, line: line)
        return h.jsonObject(r.stdout, file: file, line: line)["attributes"] as? [String: Any] ?? [:]
    }

    package func assertErrno(_ actual: Int32, _ expected: Int32, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(actual, expected, "\(what): \(FS.name(actual)), expected \(FS.name(expected))", file: file, line: line)
    }
}
