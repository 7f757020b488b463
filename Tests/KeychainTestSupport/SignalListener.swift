import Foundation
import XCTest

/// A Secret Service client that listens for the provider's signals, as libsecret's proxies do: a
/// Python program (jeepney) on a `SessionBus` that adds a match rule for every signal from
/// `org.freedesktop.secrets`, calls the service once (so the provider knows it), prints `ready`
/// and then one line per signal it receives: the member, the object path and its string
/// arguments (`ItemCreated /org/freedesktop/secrets/collection/G /org/.../G/REF`), and for
/// PropertiesChanged each changed property as NAME=VALUE (paths joined by commas). Run as the
/// vault's owner or, with `user`, as another uid. `stop()` ends it; call it from `tearDown`.
package final class SignalListener {
    private let process: Process
    private let input = Pipe()
    private let log: String
    private let harness: CLIHarness
    private var syncs = 0

    static let program = """
        import select, sys
        from jeepney import new_method_call, DBusAddress, MessageType, HeaderFields
        from jeepney.bus_messages import message_bus, MatchRule
        from jeepney.io.blocking import open_dbus_connection
        c = open_dbus_connection(bus="SESSION")
        c.send_and_get_reply(message_bus.AddMatch(MatchRule(type="signal", sender="org.freedesktop.secrets")))
        props = DBusAddress("/org/freedesktop/secrets", "org.freedesktop.secrets", "org.freedesktop.DBus.Properties")
        def show(m):
            if m.header.message_type != MessageType.signal or m.header.fields.get(HeaderFields.sender) == "org.freedesktop.DBus":
                return
            f = m.header.fields
            words = [a for a in m.body if isinstance(a, str)]
            if f.get(HeaderFields.member) == "PropertiesChanged":
                # Each changed property: NAME=VALUE, a list of paths joined by commas.
                for name, (sig, value) in sorted(m.body[1].items()):
                    words.append(name + "=" + (",".join(value) if sig == "ao" else str(value)))
            print(f.get(HeaderFields.member), f.get(HeaderFields.path), *words, flush=True)
        def call():
            # Every signal the provider sent before its reply is printed before this returns.
            serial = next(c.outgoing_serial)
            c.send_message(new_method_call(props, "Get", "ss", ("org.freedesktop.Secret.Service", "Collections")), serial=serial)
            while True:
                m = c.receive()
                if m.header.fields.get(HeaderFields.reply_serial, -1) == serial:
                    return m
                show(m)
        call()
        print("ready", flush=True)
        while True:
            if select.select([sys.stdin], [], [], 0)[0]:
                line = sys.stdin.readline()
                if not line:
                    break
                call()
                print("synced", line.strip(), flush=True)
            try:
                show(c.receive(timeout=0.1))
            except TimeoutError:
                pass
        """

    /// Starts the listener and waits until it has called the service.
    /// - Parameters:
    ///   - name: names its log in the harness's directory.
    ///   - user: runs it as this user (uid, primary group and groups through setpriv).
    package init(bus: SessionBus, name: String, user: String? = nil) throws {
        harness = bus.harness
        log = bus.harness.dir + "/listener-\(name).log"
        guard FileManager.default.createFile(atPath: log, contents: nil) else { throw XCTSkip("cannot write \(log)") }
        var argv = ["/usr/bin/python3", "-B", "-c", Self.program]
        if let user {
            guard let pw = getpwnam(user) else { throw XCTSkip("no user \(user)") }
            argv = ["/usr/bin/setpriv", "--reuid", String(pw.pointee.pw_uid), "--regid", String(pw.pointee.pw_gid),
                    "--init-groups", "--"] + argv
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        process.environment = bus.environment
        process.standardInput = input
        let output = FileHandle(forWritingAtPath: log)
        process.standardOutput = output
        process.standardError = output
        try process.run()
        guard harness.waitUntil(20, { text.contains("ready\n") || !process.isRunning }), process.isRunning else {
            let said = text
            stop()
            throw ListenerFailure(output: said)
        }
    }

    struct ListenerFailure: Error, CustomStringConvertible {
        let output: String
        var description: String { "the signal listener did not start: \(output)" }
    }

    /// What it printed so far.
    package var text: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// The signal lines after `ready` (member, path, string arguments), `synced` lines left out.
    package var signals: [String] {
        text.split(separator: "\n").map(String.init).drop { $0 != "ready" }.dropFirst().filter { !$0.hasPrefix("synced ") }
    }

    /// How many times `member` was received naming an item whose path ends in `/ref`.
    package func count(_ member: String, _ ref: String) -> Int {
        signals.filter { line in
            let parts = line.split(separator: " ")
            return parts.first == Substring(member) && parts.dropFirst(2).contains { $0.hasSuffix("/" + ref) }
        }.count
    }

    /// Has the listener call the service again and waits for the reply: every signal the
    /// provider sent it before that call is in `signals` when this returns true.
    @discardableResult
    package func sync() -> Bool {
        syncs += 1
        let mark = "synced \(syncs)\n"
        input.fileHandleForWriting.write(Data("\(syncs)\n".utf8))
        return harness.waitUntil(20) { text.contains(mark) }
    }

    package func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
