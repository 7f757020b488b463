import Foundation
import XCTest

/// Runs the real `keychainfs` binary against a vault in a scratch directory, with its own
/// runtime directory and device key, and stops its daemon afterwards.
final class CLIHarness {
    let dir: String
    let vault: String
    var environment: [String: String]

    /// The runtime directory (daemon sockets, logs, lockout files) of this harness.
    var runtimeDir: String { environment["KEYCHAINFS_RUNTIME_DIR"]! }

    init() throws {
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

    static func realPath(_ path: String) -> String {
        guard let r = realpath(path, nil) else { return path }
        defer { free(r) }
        return String(cString: r)
    }

    /// The built `keychainfs` next to the test bundle, or `$KEYCHAINFS_BIN`.
    static var binary: String {
        if let b = ProcessInfo.processInfo.environment["KEYCHAINFS_BIN"] { return b }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("keychainfs").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return ".build/debug/keychainfs"
    }

    /// The binary with every symlink resolved, as the daemon sees it in `/proc/PID/exe`.
    static var canonicalBinary: String { realPath(binary) }

    struct Result: CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String
        /// Wall-clock seconds from start to exit.
        var elapsed: Double = 0

        var description: String { "status \(status), stdout \(stdout.debugDescription), stderr \(stderr.debugDescription)" }
    }

    /// Runs `keychainfs ARGS` with `input` on standard input. Standard output and standard error
    /// are drained concurrently; a command still running after `timeout` seconds is terminated
    /// (and fails the calling test).
    @discardableResult
    func run(_ args: [String], input: String? = nil, env extra: [String: String] = [:],
             prefix: [String] = [], timeout: Double = 60,
             file: StaticString = #filePath, line: UInt = #line) throws -> Result {
        try run(args, inputData: input.map { Data($0.utf8) }, env: extra, prefix: prefix, timeout: timeout,
                file: file, line: line)
    }

    @discardableResult
    func run(_ args: [String], inputData: Data?, env extra: [String: String] = [:],
             prefix: [String] = [], timeout: Double = 60,
             file: StaticString = #filePath, line: UInt = #line) throws -> Result {
        let p = Process()
        let command = prefix + [CLIHarness.binary] + args
        p.executableURL = URL(fileURLWithPath: command[0])
        p.arguments = Array(command.dropFirst())
        p.environment = environment.merging(extra) { _, b in b }
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = inp
        let exited = DispatchSemaphore(value: 0)
        p.terminationHandler = { _ in exited.signal() }
        let start = Date()
        try p.run()
        // Drain both pipes at once so a chatty stream can never block the other.
        let group = DispatchGroup()
        let box = OutputBox()
        group.enter()
        DispatchQueue.global().async {
            box.setErr(err.fileHandleForReading.readDataToEndOfFile())
            group.leave()
        }
        group.enter()
        DispatchQueue.global().async {
            box.setOut(out.fileHandleForReading.readDataToEndOfFile())
            group.leave()
        }
        if let inputData, !inputData.isEmpty {
            // A command that exits without reading its input must not kill us with SIGPIPE.
            signal(SIGPIPE, SIG_IGN)
            inp.fileHandleForWriting.write(inputData)
        }
        try? inp.fileHandleForWriting.close()
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            p.terminate()
            XCTFail("keychainfs \(args) did not finish within \(timeout) s", file: file, line: line)
            exited.wait()
        }
        let elapsed = Date().timeIntervalSince(start)
        if group.wait(timeout: .now() + 10) == .timedOut {
            XCTFail("keychainfs \(args): output still open 10 s after exit (a child kept the pipe)", file: file, line: line)
        }
        return Result(status: p.terminationStatus, stdout: String(decoding: box.out, as: UTF8.self),
                      stderr: String(decoding: box.err, as: UTF8.self), elapsed: elapsed)
    }

    /// Creates the harness vault (or `path`) with the cheap KDF; the daemon starts unlocked.
    func createVault(passphrase: String = "pass phrase 1", path: String? = nil,
                     file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try run(["create-keychain", "--kdf", "interactive"] + (path.map { [$0] } ?? []),
                        input: passphrase + "\n", file: file, line: line)
        XCTAssertEqual(r.status, 0, "create-keychain: \(r)", file: file, line: line)
        XCTAssertEqual(r.stdout, "created \(path ?? vault)\n", file: file, line: line)
    }

    /// Parses a JSON object printed on one line.
    func jsonObject(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            XCTFail("not a JSON object: \(text.debugDescription)", file: file, line: line)
            return [:]
        }
        return obj
    }

    /// `show-keychain-info --json` as an object.
    func info(_ vaultArg: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let r = try run(["show-keychain-info", "--json"] + vaultArg, file: file, line: line)
        XCTAssertEqual(r.status, 0, "show-keychain-info: \(r)", file: file, line: line)
        return jsonObject(r.stdout, file: file, line: line)
    }

    /// The pid of the vault's daemon from `status --json`, nil when none runs.
    func daemonPID(_ vaultArg: [String] = []) throws -> Int32? {
        let r = try run(["status", "--json"] + vaultArg)
        guard r.status == 0, let obj = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
              obj["daemon"] as? Bool == true, let pid = obj["pid"] as? Int else { return nil }
        return Int32(pid)
    }

    /// Polls `condition` every 50 ms for up to `seconds`; true when it held.
    func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if try condition() { return true }
            usleep(50_000)
        } while Date() < deadline
        return try condition()
    }

    /// The daemons serving vaults in this harness's directory: (pid, vault path) from /proc.
    func daemons() -> [(pid: Int32, vault: String)] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: [(Int32, String)] = []
        for e in entries {
            guard let pid = Int32(e), let data = FileManager.default.contents(atPath: "/proc/\(e)/cmdline") else { continue }
            let argv = data.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            guard argv.count >= 3, argv[0].hasSuffix("keychainfs"), argv[1] == "daemon",
                  argv[2].hasPrefix(dir + "/") else { continue }
            found.append((pid, argv[2]))
        }
        return found
    }

    /// Stops every daemon this harness started (politely with `stop`, then SIGKILL by pid) and
    /// removes the scratch directory.
    func tearDown() {
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
    func setOut(_ d: Data) { lock.lock(); out = d; lock.unlock() }
    func setErr(_ d: Data) { lock.lock(); err = d; lock.unlock() }
}

/// Runs a system tool (useradd, groupadd, ...) as the test process; returns its status.
@discardableResult
func runTool(_ argv: [String]) -> Int32 {
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
func sleepUntilFraction(_ fraction: Double) {
    let now = Date().timeIntervalSince1970
    let frac = now - now.rounded(.down)
    let wait = frac <= fraction ? fraction - frac : 1 - frac + fraction
    usleep(UInt32(wait * 1_000_000))
}

/// True while `pid` exists and is not a zombie.
func processAlive(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
    return state != "Z" && state != "X"
}
