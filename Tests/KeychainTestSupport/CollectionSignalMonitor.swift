import Foundation
import XCTest

/// A real `dbus-monitor` on a private bus, watching the Secret Service collection signals
/// (ItemCreated, ItemChanged, ItemDeleted) and writing what it sees to `log` in the harness's
/// directory. The test that starts one calls `stop` in its tearDown.
package final class CollectionSignalMonitor {
    package let log: String
    private let process = Process()

    /// The programs the signal tests run; a test skips, naming the first one missing.
    package static func requireTools() throws {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/dbus-monitor", "/usr/bin/secret-tool", "/usr/bin/dbus-send"]
        where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not installed (scripts/setup.sh installs it)")
        }
    }

    /// Starts the monitor on `bus` and waits (at most 20 s) until it is one: it prints its own
    /// NameLost then, and from then on it sees every signal.
    package init(bus: SessionBus, file: StaticString = #filePath, line: UInt = #line) throws {
        log = bus.harness.dir + "/monitor.log"
        XCTAssertTrue(FileManager.default.createFile(atPath: log, contents: nil), "the monitor's log at \(log)", file: file, line: line)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
        process.arguments = ["--session", "type='signal',interface='org.freedesktop.Secret.Collection'"]
        process.environment = bus.environment
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle.nullDevice
        try process.run()
        let path = log
        XCTAssertTrue(bus.harness.waitUntil(20) { Self.read(path).contains("NameLost") }, "dbus-monitor did not start",
                      file: file, line: line)
    }

    /// What the monitor wrote so far.
    package static func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// Ends the monitor and waits for it.
    package func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
