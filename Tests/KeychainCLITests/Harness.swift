import Foundation
import XCTest

/// Runs the real `keychainfs` binary against a vault in a scratch directory, with its own
/// runtime directory and device key, and stops its daemon afterwards.
final class CLIHarness {
    let dir: String
    let vault: String
    var environment: [String: String]

    init() throws {
        dir = NSTemporaryDirectory() + "kcfs-cli-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chmod(dir, 0o755)
        vault = dir + "/test.vault"
        environment = ProcessInfo.processInfo.environment
        environment["KEYCHAINFS_RUNTIME_DIR"] = dir + "/run"
        environment["KEYCHAINFS_DEVICE_KEY"] = dir + "/device.key"
        environment["KEYCHAINFS_VAULT"] = vault
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

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `keychainfs ARGS` with `input` on standard input.
    @discardableResult
    func run(_ args: [String], input: String? = nil, env extra: [String: String] = [:],
             prefix: [String] = []) throws -> Result {
        let p = Process()
        let command = prefix + [CLIHarness.binary] + args
        p.executableURL = URL(fileURLWithPath: command[0])
        p.arguments = Array(command.dropFirst())
        p.environment = environment.merging(extra) { _, b in b }
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = inp
        try p.run()
        if let input { inp.fileHandleForWriting.write(Data(input.utf8)) }
        try inp.fileHandleForWriting.close()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Result(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                      stderr: String(decoding: e, as: UTF8.self))
    }

    /// Stops the daemon (if any) and removes the scratch directory.
    func tearDown() {
        _ = try? run(["stop"])
        try? FileManager.default.removeItem(atPath: dir)
    }
}
