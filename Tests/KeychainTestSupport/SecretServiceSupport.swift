import Foundation
import XCTest

/// A private session bus (`dbus-daemon --session`-like, from a config file in the harness's
/// directory) and, optionally, `keychainfs secret-service` on it. `stop()` ends both; call it
/// from `tearDown` so they end even when a test fails.
package final class SessionBus {
    package let harness: CLIHarness
    package let address: String
    private let daemon: Process
    private var provider: Process?

    /// The directory whose `.service` files the bus activates from.
    package var serviceDirectory: String { harness.dir + "/dbus-services" }

    /// Starts `dbus-daemon --nofork --print-address` with a session policy: only this user may
    /// connect (dbus-daemon's default), anyone connected may own and call anything.
    /// - Parameter otherUsers: let every uid connect (`<allow user="*"/>`), a bus shared by users;
    ///   nobody may eavesdrop on it then (only this user, the bus's, may become a monitor).
    package init(harness: CLIHarness, otherUsers: Bool = false) throws {
        self.harness = harness
        let fm = FileManager.default
        try fm.createDirectory(atPath: harness.dir + "/bus", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: harness.dir + "/dbus-services", withIntermediateDirectories: true)
        let config = harness.dir + "/bus/session.conf"
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:dir=\(harness.dir)/bus</listen>
          <servicedir>\(harness.dir)/dbus-services</servicedir>
          <policy context="default">\(otherUsers ? "\n    <allow user=\"*\"/>" : "")
            <allow send_destination="*"\(otherUsers ? "" : " eavesdrop=\"true\"")/>
            \(otherUsers ? "<allow receive_sender=\"*\"/>" : "<allow eavesdrop=\"true\"/>")
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let out = Pipe()
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--nofork", "--print-address", "--config-file=" + config]
        // Activated services inherit the bus's environment: the harness's vault and runtime dir.
        daemon.environment = harness.environment
        daemon.standardOutput = out
        daemon.standardError = FileHandle.nullDevice  // it warns that it cannot raise its fd limit
        try daemon.run()
        var printed = Data()
        while !printed.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed += chunk
        }
        address = String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !address.isEmpty else {
            daemon.terminate()
            daemon.waitUntilExit()
            throw XCTSkip("dbus-daemon printed no address")
        }
    }

    /// The bus daemon's pid.
    package var pid: pid_t { daemon.processIdentifier }

    /// The pid of the provider `startProvider` started, while it runs.
    package var providerPID: pid_t? { provider.flatMap { $0.isRunning ? $0.processIdentifier : nil } }

    /// Sends SIGTERM to the provider `startProvider` started and waits up to `seconds` for it
    /// to end. - Returns: its exit status, 128 + the signal that ended it, or nil while it runs.
    package func terminateProvider(within seconds: Double) -> Int32? {
        guard let p = provider else { return nil }
        if p.isRunning { kill(p.processIdentifier, SIGTERM) }
        guard harness.waitUntil(seconds, { !p.isRunning }) else { return nil }
        return p.terminationReason == .uncaughtSignal ? 128 + p.terminationStatus : p.terminationStatus
    }

    /// The environment a client of this bus runs with.
    package var environment: [String: String] {
        var env = harness.environment
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        return env
    }

    /// Starts `keychainfs secret-service` and waits until it owns org.freedesktop.secrets.
    package func startProvider(file: StaticString = #filePath, line: UInt = #line) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLIHarness.binary)
        p.arguments = ["secret-service"]
        p.environment = environment
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try p.run()
        provider = p
        let owned = harness.waitUntil(20) { hasOwner("org.freedesktop.secrets") || !p.isRunning }
        XCTAssertTrue(owned && p.isRunning, "secret-service did not own its name", file: file, line: line)
    }

    /// Whether a name has an owner on this bus (NameHasOwner through dbus-send).
    package func hasOwner(_ name: String) -> Bool {
        let r = run(["/usr/bin/dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                     "org.freedesktop.DBus.NameHasOwner", "string:" + name])
        return r.status == 0 && r.stdout.contains("boolean true")
    }

    /// Runs a client program on this bus.
    package func run(_ argv: [String], input: String = "", timeout: Double = 60) -> CLIHarness.Result {
        guard let r = try? Spawn.run(argv, environment: environment, input: Data(input.utf8), timeout: timeout) else {
            return CLIHarness.Result(status: -1, stdout: "", stderr: "could not start \(argv[0])")
        }
        return CLIHarness.Result(status: r.status, stdout: String(decoding: r.out, as: UTF8.self),
                                 stderr: String(decoding: r.err, as: UTF8.self), elapsed: r.elapsed)
    }

    /// Runs a Python program (Debian's python3 with its secretstorage and keyring) on this bus.
    package func python(_ program: String) -> CLIHarness.Result {
        run(["/usr/bin/python3", "-B", "-c", program])
    }

    /// Ends the provider and the bus (an activated provider ends when its bus does).
    package func stop() {
        if let p = provider, p.isRunning {
            p.terminate()
            p.waitUntilExit()
        }
        if daemon.isRunning {
            daemon.terminate()
            daemon.waitUntilExit()
        }
        // A provider the bus started sees its connection close and exits; make sure.
        if !harness.waitUntil(10, { activatedProviders().isEmpty }) {
            for pid in activatedProviders() { kill(pid, SIGKILL) }
        }
    }

    /// `keychainfs secret-service` processes on this bus (by their DBUS_SESSION_BUS_ADDRESS).
    package func activatedProviders() -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { e -> Int32? in
            guard let pid = Int32(e), let cmd = FileManager.default.contents(atPath: "/proc/\(e)/cmdline"),
                  let env = FileManager.default.contents(atPath: "/proc/\(e)/environ") else { return nil }
            let argv = cmd.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            // `keychainfs secret-service` runs on as `keychainfs-daemon secret-service` (the same pid).
            guard argv.count >= 2, argv[0].hasSuffix("keychainfs") || argv[0].hasSuffix("keychainfs-daemon"), argv[1] == "secret-service",
                  env.split(separator: 0).contains(where: { String(decoding: $0, as: UTF8.self) == "DBUS_SESSION_BUS_ADDRESS=" + address })
            else { return nil }
            return pid
        }
    }
}
