import Foundation
import Glibc
import KeychainSystem
import XCTest

final class ProcessTests: XCTestCase {
    private var scratch: ScratchDirectory!

    override func setUpWithError() throws { scratch = try ScratchDirectory() }
    override func tearDown() { scratch?.remove() }

    func testIdentityIsThisProcesssOwn() throws {
        XCTAssertEqual(CurrentProcess.id, getpid())
        XCTAssertEqual(CurrentProcess.userID, getuid())
        XCTAssertEqual(CurrentProcess.effectiveUserID, geteuid())
        XCTAssertEqual(CurrentProcess.groupID, getgid())
        XCTAssertEqual(CurrentProcess.pageSize, Int(getpagesize()))
        let exe = try CurrentProcess.executablePath()
        XCTAssertTrue(exe.hasPrefix("/"))
        XCTAssertEqual(try FileSystem.status(of: exe), try FileSystem.status(of: "/proc/\(getpid())/exe"))
        XCTAssertEqual(try CurrentProcess.hostName(), try String(contentsOfFile: "/proc/sys/kernel/hostname", encoding: .utf8)
            .trimmingCharacters(in: .newlines))
    }

    func testTheLockedMemoryLimitIsTheSoftOneAndNilWhenUnlimited() throws {
        let memlock = __rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue)
        var saved = rlimit()
        XCTAssertEqual(getrlimit(memlock, &saved), 0)
        defer { setrlimit(memlock, &saved) }
        try XCTSkipIf(saved.rlim_max < 1 << 16, "the hard RLIMIT_MEMLOCK is below 64 KiB")
        var lowered = rlimit(rlim_cur: 1 << 16, rlim_max: saved.rlim_max)
        XCTAssertEqual(setrlimit(memlock, &lowered), 0)
        XCTAssertEqual(CurrentProcess.lockedMemoryLimit, 1 << 16)
        if saved.rlim_max == rlim_t.max {
            var unlimited = rlimit(rlim_cur: rlim_t.max, rlim_max: rlim_t.max)
            XCTAssertEqual(setrlimit(memlock, &unlimited), 0)
            XCTAssertNil(CurrentProcess.lockedMemoryLimit)
        }
    }

    /// Once a large block was freed, glibc would serve a block of 512 KiB from an arena (its raised
    /// mmap threshold) and keep its pages when it is freed; with the thresholds fixed the block
    /// has a mapping of its own, which its free unmaps.
    /// Run in a fresh process of this test binary, this test alone: in a process that ran other
    /// tests the block may come from free space the heap already holds, whatever the thresholds.
    func testABlockPast128KiBIsUnmappedWhenFreedAfterALargeOneWas() throws {
        guard ProcessInfo.processInfo.environment[Self.heapCheck] != nil else {
            let test = "KeychainSystemTests.ProcessTests/testABlockPast128KiBIsUnmappedWhenFreedAfterALargeOneWas"
            let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" } + ["\(Self.heapCheck)=1"]
            let pid = try ChildProcess.spawn([try CurrentProcess.executablePath(), test], environment: environment,
                                             setup: [.open(1, path: "/dev/null", .writeOnly), .open(2, path: "/dev/null", .writeOnly)])
            XCTAssertEqual(ChildProcess.waitForExit(pid).map(ChildProcess.exitCode), 0, "the check in a fresh process failed")
            return
        }
        XCTAssertTrue(CurrentProcess.keepFreeHeapReturnable())
        let large = UnsafeMutableRawPointer.allocate(byteCount: 8 << 20, alignment: 16)
        large.initializeMemory(as: UInt8.self, repeating: 1, count: 8 << 20)
        large.deallocate()
        let block = UnsafeMutableRawPointer.allocate(byteCount: 512 << 10, alignment: 16)
        block.initializeMemory(as: UInt8.self, repeating: 1, count: 512 << 10)
        // The mapping that holds it, by its exact bounds: another mapping made after the free
        // (reading /proc/self/maps allocates) may take the same addresses, never the same bounds
        // by chance, and an arena's mapping keeps them.
        let holding = try XCTUnwrap(try mapping(holding: UInt(bitPattern: block)))
        block.deallocate()
        XCTAssertFalse(try mappings().contains { $0 == holding }, "the freed block's pages stay in an arena")
    }

    private static let heapCheck = "KEYCHAINFS_TEST_HEAP_CHECK"

    private func mappings() throws -> [Range<UInt>] {
        try String(contentsOfFile: "/proc/self/maps", encoding: .utf8).split(separator: "\n").compactMap { line in
            let bounds = line.prefix { $0 != " " }.split(separator: "-").compactMap { UInt($0, radix: 16) }
            return bounds.count == 2 ? bounds[0]..<bounds[1] : nil
        }
    }

    private func mapping(holding address: UInt) throws -> Range<UInt>? {
        try mappings().first { $0.contains(address) }
    }

    func testEnvironmentValuesAreNilWhenUnsetOrEmpty() {
        let name = "KEYCHAINFS_SYSTEM_TEST_\(getpid())"
        defer { unsetenv(name) }
        XCTAssertNil(CurrentProcess.environment(name))
        setenv(name, "", 1)
        XCTAssertNil(CurrentProcess.environment(name))
        setenv(name, "value", 1)
        XCTAssertEqual(CurrentProcess.environment(name), "value")
    }

    func testSettingTheEnvironmentKeepsAValueUnlessToldToReplaceIt() throws {
        let name = "KEYCHAINFS_SYSTEM_TEST_SET_\(getpid())"
        defer { unsetenv(name) }
        try CurrentProcess.setEnvironment(name, to: "first", replacing: false)
        XCTAssertEqual(CurrentProcess.environment(name), "first")
        try CurrentProcess.setEnvironment(name, to: "second", replacing: false)
        XCTAssertEqual(String(cString: getenv(name)), "first")
        try CurrentProcess.setEnvironment(name, to: "second", replacing: true)
        XCTAssertEqual(String(cString: getenv(name)), "second")
        setenv(name, "", 1)
        try CurrentProcess.setEnvironment(name, to: "third", replacing: false)
        XCTAssertEqual(String(cString: getenv(name)), "")  // set, though empty: kept
        XCTAssertEqual(thrownErrno { try CurrentProcess.setEnvironment("A=B", to: "x", replacing: true) }, .invalidArgument)
    }

    func testASpawnedChildGetsItsEnvironmentDescriptorsAndDirectory() throws {
        let out = scratch.file("out")
        let pid = try ChildProcess.spawn(["/bin/sh", "-c", "echo \"$GREETING\"; pwd; ls /proc/self/fd | wc -l"],
                                         environment: ["GREETING=hello", "PATH=/usr/bin:/bin"],
                                         setup: [.open(0, path: "/dev/null", .readOnly),
                                                 .open(1, path: out, .writeOnly, options: [.create, .truncate], permissions: .ownerReadWrite),
                                                 .duplicate(FileDescriptor(rawValue: 1), as: 2),
                                                 .closeFrom(3),
                                                 .changeDirectory(scratch.path)])
        XCTAssertEqual(ChildProcess.waitForExit(pid).map(ChildProcess.exitCode), 0)
        let lines = String(decoding: try FileSystem.contents(of: out, limit: 1000), as: UTF8.self).split(separator: "\n")
        XCTAssertEqual(lines.count, 3)
        XCTAssertEqual(lines.first, "hello")
        XCTAssertEqual(String(lines[1]), try FileSystem.canonicalPath(scratch.path))
        // 0, 1, 2 and the one ls opens to list them: nothing of this process came along.
        XCTAssertEqual(lines.last.map { $0.trimmingCharacters(in: .whitespaces) }, "4")
    }

    func testANewSessionAndAMissingProgram() throws {
        let pid = try ChildProcess.spawn(["/bin/sh", "-c", "test \"$(ps -o sid= -p $$ | tr -d ' ')\" = \"$$\""],
                                         environment: ["PATH=/usr/bin:/bin"], newSession: true)
        XCTAssertEqual(ChildProcess.waitForExit(pid).map(ChildProcess.exitCode), 0)
        XCTAssertEqual(thrownErrno { try ChildProcess.spawn([scratch.file("missing")], environment: []) }, .noSuchFile)
        XCTAssertEqual(CurrentProcess.replace(with: scratch.file("missing"), arguments: ["missing"]), .noSuchFile)
    }

    func testStatusIfEndedIsNilWhileAChildRuns() throws {
        let (mine, theirs) = try FileDescriptor.unixStreamPair()
        let pid = try ChildProcess.spawn(["/bin/sh", "-c", "read line; exit 5"], environment: [],
                                         setup: [.duplicate(theirs, as: 0), .closeFrom(3)])
        try theirs.close()
        XCTAssertNil(ChildProcess.statusIfEnded(pid))  // blocked reading its standard input
        try mine.close()  // end of its input: it exits
        var status: Int32?
        while status == nil { status = ChildProcess.statusIfEnded(pid); if status == nil { sched_yield() } }
        XCTAssertEqual(status.map(ChildProcess.exitCode), 5)
        XCTAssertNil(ChildProcess.statusIfEnded(pid))  // collected
    }

    func testClocks() {
        let before = time(nil)
        let now = SystemClock.realtime()
        let after = time(nil)
        XCTAssertTrue((Int64(before)...Int64(after)).contains(now.seconds))
        XCTAssertTrue((0..<1_000_000_000).contains(now.nanoseconds))
        let a = SystemClock.monotonic(), b = SystemClock.monotonic()
        XCTAssertLessThanOrEqual(a.seconds * 1_000_000_000 + a.nanoseconds, b.seconds * 1_000_000_000 + b.nanoseconds)
    }

    func testUsersAndGroupsByNameAndNumber() {
        XCTAssertEqual(UserDatabase.userID(named: "root"), 0)
        XCTAssertEqual(UserDatabase.userName(of: 0), "root")
        XCTAssertEqual(UserDatabase.groupID(named: "root"), 0)
        XCTAssertEqual(UserDatabase.groupName(of: 0), "root")
        XCTAssertNil(UserDatabase.userID(named: "no-such-user-\(getpid())"))
        XCTAssertNil(UserDatabase.groupID(named: "no-such-group-\(getpid())"))
        XCTAssertNil(UserDatabase.userName(of: 4_000_000_000))
        // root's home and group as /etc/passwd gives them.
        let passwd = (try? String(contentsOfFile: "/etc/passwd", encoding: .utf8)) ?? ""
        if let root = passwd.split(separator: "\n").first(where: { $0.hasPrefix("root:") }) {
            let fields = root.split(separator: ":", omittingEmptySubsequences: false)
            XCTAssertEqual(UserDatabase.homeDirectory(of: 0), String(fields[5]))
            XCTAssertEqual(UserDatabase.primaryGroup(of: 0), UInt32(fields[3]))
        }
        XCTAssertNil(UserDatabase.homeDirectory(of: 4_000_000_000))
        XCTAssertNil(UserDatabase.primaryGroup(of: 4_000_000_000))
    }
}
