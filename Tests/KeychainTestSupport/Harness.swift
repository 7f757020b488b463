import Foundation
import XCTest

/// Runs the real `keychainfs` binary against a vault in a scratch directory, with its own
/// runtime directory and device key, and stops its daemon afterwards.
package final class CLIHarness {
    package let dir: String
    package let vault: String
    package var environment: [String: String]

    /// The runtime directory (daemon sockets, logs, lockout files) of this harness.
    package var runtimeDir: String { environment["KEYCHAINFS_RUNTIME_DIR"]! }

    package init() throws {
        let base = NSTemporaryDirectory() + "kcfs-cli-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        chmod(base, 0o755)
        // The daemon names vaults by their canonical path; use the same form here.
        dir = CLIHarness.realPath(base)
        vault = dir + "/test.vault"
        environment = ProcessInfo.processInfo.environment
        environment["KEYCHAINFS_RUNTIME_DIR"] = dir + "/run"
        environment["KEYCHAINFS_DEVICE_KEY"] = dir + "/device.key"
        environment["KEYCHAINFS_VAULT"] = vault
    }

    package static func realPath(_ path: String) -> String {
        guard let r = realpath(path, nil) else { return path }
        defer { free(r) }
        return String(cString: r)
    }

    /// The built `keychainfs` next to the test bundle, or `$KEYCHAINFS_BIN`; a copy other users
    /// can run when the checkout is private (`SharedCopies`), since tests run it as them. Its
    /// engine, `keychainfs-daemon`, is copied with it: `keychainfs` runs the one beside itself.
    package static let binary: String = SharedCopies.reachable(builtBinary, with: [engine(beside: builtBinary)])

    /// `keychainfs-daemon` beside `keychainfs`: what runs `daemon`, `create-keychain` and `mount`.
    package static var engineBinary: String { engine(beside: binary) }

    /// The engine with every symlink resolved: the daemon's `/proc/PID/exe` and argv[0].
    package static var canonicalEngineBinary: String { realPath(engineBinary) }

    private static func engine(beside binary: String) -> String {
        (binary as NSString).deletingLastPathComponent + "/keychainfs-daemon"
    }

    private static var builtBinary: String {
        if let b = ProcessInfo.processInfo.environment["KEYCHAINFS_BIN"] { return b }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("keychainfs").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug/keychainfs"
    }

    /// The binary with every symlink resolved, as the daemon sees it in `/proc/PID/exe`.
    package static var canonicalBinary: String { realPath(binary) }

    package struct Result: CustomStringConvertible {
        package var status: Int32
        package var stdout: String
        package var stderr: String
        /// Wall-clock seconds from start to exit.
        package var elapsed: Double = 0

        package init(status: Int32, stdout: String, stderr: String, elapsed: Double = 0) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
            self.elapsed = elapsed
        }

        package var description: String { "status \(status), stdout \(stdout.debugDescription), stderr \(stderr.debugDescription)" }
    }

    /// Runs `keychainfs ARGS` with `input` on standard input. Standard output and standard error
    /// are drained concurrently; a command still running after `timeout` seconds is terminated
    /// (and fails the calling test).
    @discardableResult
    package func run(_ args: [String], input: String? = nil, env extra: [String: String] = [:],
             prefix: [String] = [], timeout: Double = 60,
             file: StaticString = #filePath, line: UInt = #line) throws -> Result {
        try run(args, inputData: input.map { Data($0.utf8) }, env: extra, prefix: prefix, timeout: timeout,
                file: file, line: line)
    }

    @discardableResult
    package func run(_ args: [String], inputData: Data?, env extra: [String: String] = [:],
             prefix: [String] = [], timeout: Double = 60,
             file: StaticString = #filePath, line: UInt = #line) throws -> Result {
        let command = prefix + [CLIHarness.binary] + args
        let env = environment.merging(extra) { _, b in b }
        let r = try Spawn.run(command, environment: env, input: inputData ?? Data(), timeout: timeout)
        if r.timedOut {
            XCTFail("keychainfs \(args) did not finish within \(timeout) s", file: file, line: line)
        }
        return Result(status: r.status, stdout: String(decoding: r.out, as: UTF8.self),
                      stderr: String(decoding: r.err, as: UTF8.self), elapsed: r.elapsed)
    }

    /// Creates the harness vault (or `path`) with the cheap KDF; the daemon starts unlocked.
    package func createVault(passphrase: String = "pass phrase 1", path: String? = nil,
                     file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try run(["create-keychain", "--kdf", "interactive"] + (path.map { [$0] } ?? []),
                        input: passphrase + "\n", file: file, line: line)
        XCTAssertEqual(r.status, 0, "create-keychain: \(r)", file: file, line: line)
        XCTAssertEqual(r.stdout, "created \(path ?? vault)\n", file: file, line: line)
    }

    /// Parses a JSON object printed on one line.
    package func jsonObject(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            XCTFail("not a JSON object: \(text.debugDescription)", file: file, line: line)
            return [:]
        }
        return obj
    }

    /// `show-keychain-info --json` as an object.
    package func info(_ vaultArg: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let r = try run(["show-keychain-info", "--json"] + vaultArg, file: file, line: line)
        XCTAssertEqual(r.status, 0, "show-keychain-info: \(r)", file: file, line: line)
        return jsonObject(r.stdout, file: file, line: line)
    }

    /// The pid of the vault's daemon from `status --json`, nil when none runs.
    package func daemonPID(_ vaultArg: [String] = []) throws -> Int32? {
        let r = try run(["status", "--json"] + vaultArg)
        guard r.status == 0, let obj = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
              obj["daemon"] as? Bool == true, let pid = obj["pid"] as? Int else { return nil }
        return Int32(pid)
    }

    /// Polls `condition` every 50 ms for up to `seconds`; true when it held.
    package func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if try condition() { return true }
            usleep(50_000)
        } while Date() < deadline
        return try condition()
    }

    /// The daemons serving vaults in this harness's directory: (pid, vault path) from /proc.
    package func daemons() -> [(pid: Int32, vault: String)] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: [(Int32, String)] = []
        for e in entries {
            guard let pid = Int32(e), let data = FileManager.default.contents(atPath: "/proc/\(e)/cmdline") else { continue }
            let argv = data.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            guard argv.count >= 3, argv[0].hasSuffix("/keychainfs-daemon"), argv[1] == "daemon",
                  argv[2].hasPrefix(dir + "/") else { continue }
            found.append((pid, argv[2]))
        }
        return found
    }

    /// Stops every daemon this harness started (politely with `stop`, then SIGKILL by pid) and
    /// removes the scratch directory.
    package func tearDown() {
        _ = try? run(["stop"], timeout: 10)
        for d in daemons() {
            _ = try? run(["stop", d.vault], timeout: 10)
        }
        for d in daemons() {
            kill(d.pid, SIGKILL)
        }
        try? FileManager.default.removeItem(atPath: dir)
    }
}

private final class OutputBox: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var out = Data()
    private(set) var err = Data()
    package func setOut(_ d: Data) { lock.lock(); out = d; lock.unlock() }
    package func setErr(_ d: Data) { lock.lock(); err = d; lock.unlock() }
}

/// Runs a system tool (useradd, groupadd, ...) as the test process; returns its status.
@discardableResult
package func runTool(_ argv: [String]) -> Int32 {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: argv[0])
    p.arguments = Array(argv.dropFirst())
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    do { try p.run() } catch { return -1 }
    p.waitUntilExit()
    return p.terminationStatus
}

/// Sleeps until the wall clock's fraction of a second is at least `fraction` in a fresh second
/// (used to place an event at a known point inside a second).
package func sleepUntilFraction(_ fraction: Double) {
    let now = Date().timeIntervalSince1970
    let frac = now - now.rounded(.down)
    let wait = frac <= fraction ? fraction - frac : 1 - frac + fraction
    usleep(UInt32(wait * 1_000_000))
}

/// True while `pid` exists and is not a zombie.
package func processAlive(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
    return state != "Z" && state != "X"
}

/// Runs a program with posix_spawn, passing it only standard input, output and error.
///
/// Foundation's `Process` hands every child an extra socket and notices the child's exit only
/// when that socket closes, so a long-lived process the child starts and that keeps it makes
/// `Process` wait for that process instead of the child (`DaemonClient.spawnDetached` closes it
/// in the daemons the CLI starts; the other programs the tests run promise nothing).
package enum Spawn {
    package struct Outcome {
        package var status: Int32
        package var out: Data
        package var err: Data
        package var elapsed: Double
        package var timedOut: Bool

        package init(status: Int32, out: Data, err: Data, elapsed: Double, timedOut: Bool) {
            self.status = status
            self.out = out
            self.err = err
            self.elapsed = elapsed
            self.timedOut = timedOut
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package let errno: Int32
        package let what: String
        package var description: String { "\(what) failed: errno \(errno)" }

        package init(errno: Int32, what: String) {
            self.errno = errno
            self.what = what
        }
    }

    /// - Parameter passing: a descriptor the child gets as its descriptor 3 (nothing else is passed).
    package static func run(_ argv: [String], environment: [String: String], input: Data, timeout: Double,
                    passing extra: Int32? = nil) throws -> Outcome {
        var inFD: [Int32] = [0, 0], outFD: [Int32] = [0, 0], errFD: [Int32] = [0, 0]
        guard pipe(&inFD) == 0, pipe(&outFD) == 0, pipe(&errFD) == 0 else { throw Failure(errno: errno, what: "pipe") }
        for fd in inFD + outFD + errFD { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inFD[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outFD[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errFD[1], 2)
        if let extra {
            posix_spawn_file_actions_adddup2(&actions, extra, 3)
            closeFrom(4, &actions)
        } else {
            closeFrom(3, &actions)
        }
        let cargv = argv.map { strdup($0) } + [nil]
        let cenv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cargv + cenv { free(p) } }
        var pid: pid_t = 0
        let start = Date()
        let rc = posix_spawn(&pid, argv[0], &actions, nil, cargv, cenv)
        close(inFD[0]); close(outFD[1]); close(errFD[1])
        guard rc == 0 else {
            close(inFD[1]); close(outFD[0]); close(errFD[0])
            throw Failure(errno: rc, what: "posix_spawn \(argv[0])")
        }
        let box = OutputBox()
        let readers = DispatchGroup()
        for (fd, isOut) in [(outFD[0], true), (errFD[0], false)] {
            readers.enter()
            DispatchQueue.global().async {
                let data = FileHandle(fileDescriptor: fd, closeOnDealloc: true).readDataToEndOfFile()
                if isOut { box.setOut(data) } else { box.setErr(data) }
                readers.leave()
            }
        }
        let exited = DispatchSemaphore(value: 0)
        let statusBox = StatusBox()
        let child = pid
        Thread.detachNewThread {
            var st: Int32 = 0
            var r: pid_t
            repeat { r = waitpid(child, &st, 0) } while r < 0 && errno == EINTR
            statusBox.set(r == child ? st : 0xff00)     // lost the status: report exit 255
            exited.signal()
        }
        if !input.isEmpty {
            signal(SIGPIPE, SIG_IGN)    // a command that exits without reading must not kill us
            input.withUnsafeBytes { buf in
                var done = 0
                while done < buf.count {
                    let n = write(inFD[1], buf.baseAddress! + done, buf.count - done)
                    if n < 0 { if errno == EINTR { continue }; break }
                    done += n
                }
            }
        }
        close(inFD[1])
        var timedOut = false
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            kill(pid, SIGKILL)
            exited.wait()
        }
        let elapsed = Date().timeIntervalSince(start)
        if readers.wait(timeout: .now() + 10) == .timedOut { timedOut = true }
        let st = statusBox.value
        let status: Int32 = (st & 0x7f) == 0 ? (st >> 8) & 0xff : 128 + (st & 0x7f)
        return Outcome(status: status, out: box.out, err: box.err, elapsed: elapsed, timedOut: timedOut)
    }
}

extension Spawn {
    /// Closes every descriptor from `first` up in the child: glibc's posix_spawn_file_actions_addclosefrom_np
    /// (hidden from Swift behind _GNU_SOURCE, so looked up), else one close per open descriptor.
    package static func closeFrom(_ first: Int32, _ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let sym = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            let closefrom = unsafeBitCast(sym, to: CloseFrom.self)
            if closefrom(&actions, first) == 0 { return }
        }
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int32($0) } ?? []
        for fd in fds where fd >= first { posix_spawn_file_actions_addclose(&actions, fd) }
    }
}

private final class StatusBox: @unchecked Sendable {
    private let lock = NSLock()
    private var status: Int32 = 0
    package func set(_ s: Int32) { lock.lock(); status = s; lock.unlock() }
    package var value: Int32 { lock.lock(); defer { lock.unlock() }; return status }
}
