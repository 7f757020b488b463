import Foundation
import XCTest

// Helpers of DaemonAttackTests (issue 13): throw-away Unix users, attacker programs run as one
// of them, a process placed on a chosen pid, and a sampler of the daemon's /proc numbers.

/// A step of an attack test that did not happen (the failure is already recorded).
package struct AttackStepFailed: Error, CustomStringConvertible {
    package var description: String

    package init(description: String) {
        self.description = description
    }
}

/// A Unix user made for one test.
package struct TestUser {
    package let name: String
    package let uid: UInt32
    package let gid: UInt32

    /// setpriv arguments that run a program as this user, with its groups from /etc/group
    /// (`initGroups`) or with none.
    package func setpriv(initGroups: Bool) -> [String] {
        ["/usr/bin/setpriv", "--reuid", String(uid), "--regid", String(gid), initGroups ? "--init-groups" : "--clear-groups"]
    }

    package init(name: String, uid: UInt32, gid: UInt32) {
        self.name = name
        self.uid = uid
        self.gid = gid
    }
}

/// Users and one Unix group with names unique to the run ("kcfs" and six random letters), so
/// two runs on one machine do not meet; `remove()` deletes them all.
package final class TestAccounts {
    package private(set) var users: [TestUser] = []
    package private(set) var groupName: String?
    package private(set) var groupID: UInt32 = 0

    package init() {}

    package static func uniqueName() -> String {
        "kcfs" + String((0..<6).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
    }

    /// Makes the group. - Throws: when groupadd fails.
    package func makeGroup() throws {
        let name = Self.uniqueName()
        guard runTool(["/usr/sbin/groupadd", name]) == 0, let g = getgrnam(name) else {
            throw XCTSkip("groupadd \(name) failed")
        }
        groupName = name
        groupID = g.pointee.gr_gid
    }

    /// Makes a user without a home directory, in the group when `inGroup`.
    package func makeUser(inGroup: Bool = false) throws -> TestUser {
        let name = Self.uniqueName()
        var argv = ["/usr/sbin/useradd", "-M", "-N", "-s", "/usr/sbin/nologin"]
        if inGroup, let g = groupName { argv += ["-G", g] }
        guard runTool(argv + [name]) == 0, let pw = getpwnam(name) else { throw XCTSkip("useradd \(name) failed") }
        let user = TestUser(name: name, uid: pw.pointee.pw_uid, gid: pw.pointee.pw_gid)
        users.append(user)
        return user
    }

    package func remove() {
        for u in users { _ = runTool(["/usr/sbin/userdel", u.name]) }
        users = []
        if let g = groupName { _ = runTool(["/usr/sbin/groupdel", g]) }
        groupName = nil
    }
}

/// A program running in the background in its own process group, with a pipe to its standard
/// input and one from its standard output (read line by line); standard error goes to a file.
package final class BackgroundProcess {
    package let pid: pid_t
    package let argv: [String]
    private let toChild: Int32
    private let fromChild: Int32
    private let errorPath: String
    private var buffered: [UInt8] = []
    private var exitStatus: Int32?

    /// - Parameter errorPath: where the program's standard error goes.
    package init(_ argv: [String], environment: [String: String], errorPath: String) throws {
        var inFD: [Int32] = [0, 0], outFD: [Int32] = [0, 0]
        guard pipe(&inFD) == 0, pipe(&outFD) == 0 else { throw Spawn.Failure(errno: errno, what: "pipe") }
        for fd in inFD + outFD { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let errFD = open(errorPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard errFD >= 0 else { throw Spawn.Failure(errno: errno, what: "open \(errorPath)") }
        defer { close(errFD) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inFD[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outFD[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errFD, 2)
        Spawn.closeFrom(3, &actions)
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        // Its own process group, so that a stop reaches the children it forks too.
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attr, 0)
        let cargv = argv.map { strdup($0) } + [nil]
        let cenv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cargv + cenv { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, argv[0], &actions, &attr, cargv, cenv)
        close(inFD[0])
        close(outFD[1])
        guard rc == 0 else {
            close(inFD[1])
            close(outFD[0])
            throw Spawn.Failure(errno: rc, what: "posix_spawn \(argv[0])")
        }
        pid = child
        self.argv = argv
        toChild = inFD[1]
        fromChild = outFD[0]
        self.errorPath = errorPath
        signal(SIGPIPE, SIG_IGN)  // a program that died must not take the test with it
    }

    deinit {
        stop()
        close(toChild)
        close(fromChild)
    }

    /// The next line of standard output, or nil when none came within `seconds` (or it ended).
    package func line(within seconds: Double) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let nl = buffered.firstIndex(of: 10) {
                let line = String(decoding: buffered[..<nl], as: UTF8.self)
                buffered.removeSubrange(...nl)
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var pfd = pollfd(fd: fromChild, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(left, 1) * 1000) + 1)
            if ready < 0 && errno != EINTR { return nil }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fromChild, &chunk, chunk.count)
            if n <= 0 { return nil }
            buffered += chunk[0..<n]
        }
    }

    /// The next line, which must start with `word`; fails the test with the program's standard
    /// error when it does not come within `seconds`.
    package func expect(_ word: String, within seconds: Double, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        try expect([word], within: seconds, file: file, line: line)
    }

    /// The next line, which must start with one of `words`.
    package func expect(_ words: [String], within seconds: Double, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let wanted = words.joined(separator: "|")
        guard let text = self.line(within: seconds) else {
            XCTFail("\(argv.last ?? "?"): no `\(wanted)` line within \(seconds) s; stderr: \(errors)", file: file, line: line)
            throw AttackStepFailed(description: "no `\(wanted)` from \(argv)")
        }
        let got = text.split(separator: " ").map(String.init)
        guard let first = got.first, words.contains(first) else {
            XCTFail("\(argv.last ?? "?"): expected `\(wanted) ...`, got \(text.debugDescription); stderr: \(errors)", file: file, line: line)
            throw AttackStepFailed(description: "unexpected line from \(argv)")
        }
        return got
    }

    /// Writes `word` and a newline to the program's standard input.
    package func tell(_ word: String) {
        let bytes = Array((word + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(toChild, $0.baseAddress, $0.count) }
    }

    /// The exit status once it has exited, waiting up to `seconds`; nil while it runs.
    package func exitStatus(within seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while exitStatus == nil {
            var st: Int32 = 0
            let r = waitpid(pid, &st, WNOHANG)
            if r == pid { exitStatus = (st & 0x7f) == 0 ? (st >> 8) & 0xff : 128 + (st & 0x7f); break }
            if r < 0 && errno != EINTR { exitStatus = -1; break }
            if Date() > deadline { return nil }
            usleep(20_000)
        }
        return exitStatus
    }

    /// Kills the program and everything in its process group, and reaps it.
    package func stop() {
        guard exitStatus == nil else { return }
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        _ = exitStatus(within: 10)
    }

    package var errors: String {
        (try? String(contentsOfFile: errorPath, encoding: .utf8)).map { String($0.suffix(2000)) } ?? ""
    }
}

/// The attacker programs in Attackers/, run with /usr/bin/python3 as a test user.
package enum Attackers {
    package static var directory: String {
        SharedCopies.reachable(URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Attackers").path)
    }

    /// Starts `script ARGS` as `user` with no supplementary groups (an outsider) or its own.
    package static func start(_ script: String, _ args: [String], as user: TestUser, initGroups: Bool = false,
                      scratch: String) throws -> BackgroundProcess {
        let argv = user.setpriv(initGroups: initGroups) + ["/usr/bin/python3", "-u", "-B", directory + "/" + script] + args
        return try BackgroundProcess(argv, environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"],
                                     errorPath: scratch + "/" + script + ".err")
    }
}

/// Puts a new process running `argv` on `pid`, which must be free: writes pid-1 to
/// /proc/sys/kernel/ns_last_pid and spawns, retrying when another process of the machine takes
/// the pid first. Returns the process, or nil when it could not be arranged.
package func spawnOnPID(_ pid: pid_t, _ argv: [String], scratch: String, attempts: Int = 40) -> BackgroundProcess? {
    for _ in 0..<attempts {
        // A process that took the pid in an earlier attempt may still be exiting.
        var waited = 0
        while access("/proc/\(pid)", F_OK) == 0 && waited < 100 { usleep(20_000); waited += 1 }
        guard access("/proc/\(pid)", F_OK) != 0 else { return nil }
        let fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY)
        guard fd >= 0 else { return nil }
        let text = Array(String(pid - 1).utf8)
        let wrote = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard wrote == text.count else { return nil }
        guard let p = try? BackgroundProcess(argv, environment: ["PATH": "/usr/bin:/bin"], errorPath: scratch + "/impostor.err")
        else { return nil }
        if p.pid == pid { return p }
        p.stop()
    }
    return nil
}

/// The largest values of the daemon's mapping count (/proc/PID/maps lines) and its VmLck and
/// VmRSS (/proc/PID/status, KiB), sampled every 100 ms on a thread of its own until `stop()`.
package final class DaemonSampler: @unchecked Sendable {
    package struct Peaks: CustomStringConvertible {
        package var maps = 0
        package var lockedKiB = 0
        package var residentKiB = 0
        package var samples = 0
        package var description: String {
            "peaks over \(samples) samples: \(maps) mappings, VmLck \(lockedKiB / 1024) MiB, VmRSS \(residentKiB / 1024) MiB"
        }
    }

    private let pid: Int32
    private let lock = NSLock()
    private var peaks = Peaks()
    private var running = true
    private let finished = DispatchSemaphore(value: 0)

    package init(pid: Int32) {
        self.pid = pid
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                sample()
                usleep(100_000)
            }
            finished.signal()
        }
    }

    private func sample() {
        let maps = Self.lineCount("/proc/\(pid)/maps")
        let status = ProcessMemory.readProcFile("/proc/\(pid)/status") ?? ""
        let locked = Self.kib(status, "VmLck:"), resident = Self.kib(status, "VmRSS:")
        lock.withLock {
            peaks.maps = max(peaks.maps, maps)
            peaks.lockedKiB = max(peaks.lockedKiB, locked)
            peaks.residentKiB = max(peaks.residentKiB, resident)
            peaks.samples += 1
        }
    }

    package var current: Peaks { lock.withLock { peaks } }

    /// Stops sampling (after one last sample) and returns the peaks.
    package func stop() -> Peaks {
        if lock.withLock({ let was = running; running = false; return was }) { finished.wait() }
        sample()
        return current
    }

    package static func lineCount(_ path: String) -> Int {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var count = 0
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = read(fd, &buf, buf.count)
            if n <= 0 { return count }
            for i in 0..<n where buf[i] == 10 { count += 1 }
        }
    }

    package static func kib(_ status: String, _ key: String) -> Int {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
        return Int(line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
    }
}
