import Foundation
import XCTest

/// One vault and daemon for the Security-module tests of a class: the module connects once per
/// process through `KEYCHAINFS_SOCKET`, so every class points it at its own daemon's socket.
open class SecurityTestCase: XCTestCase {
    nonisolated(unsafe) package static var harness: CLIHarness?
    /// The process's `KEYCHAINFS_*` variables before this class set its own, restored after it:
    /// later tests' children (mount(8), helpers) must not inherit a removed harness's paths.
    nonisolated(unsafe) package static var savedEnvironment: [String: String?] = [:]

    open override class func setUp() {
        super.setUp()
        guard let h = try? CLIHarness() else { return }
        harness = h
        _ = try? h.createVault()
        let current = ProcessInfo.processInfo.environment
        savedEnvironment = [:]
        for k in Set(h.environment.keys.filter { $0.hasPrefix("KEYCHAINFS_") } + ["KEYCHAINFS_SOCKET"]) {
            savedEnvironment[k] = .some(current[k])
        }
        // The module reads these on its first call; the CLI's runtime dir decides the socket.
        for (k, v) in h.environment where k.hasPrefix("KEYCHAINFS_") { setenv(k, v, 1) }
        if let status = try? h.run(["status", "--json"]).stdout,
           let obj = try? JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any],
           obj["daemon"] as? Bool == true {
            let socket = socketPath(h)
            setenv("KEYCHAINFS_SOCKET", socket, 1)
        }
    }

    open override class func tearDown() {
        harness?.tearDown()
        harness = nil
        for (k, v) in savedEnvironment {
            if let v { setenv(k, v, 1) } else { unsetenv(k) }
        }
        savedEnvironment = [:]
        super.tearDown()
    }

    package static func socketPath(_ h: CLIHarness) -> String {
        let run = h.environment["KEYCHAINFS_RUNTIME_DIR"]!
        let socks = (try? FileManager.default.contentsOfDirectory(atPath: run))?.filter { $0.hasSuffix(".sock") } ?? []
        return run + "/" + (socks.first ?? "missing.sock")
    }

    package var h: CLIHarness { Self.harness! }
}
