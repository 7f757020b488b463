import KeychainCrypto
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// Asks the user for a passphrase with a pinentry program (pinentry-curses, -gnome3, -tty, ...),
/// speaking GnuPG's Assuan protocol to it as gpg-agent does: `OPTION`, `SETTITLE`, `SETDESC`,
/// `SETPROMPT`, then `GETPIN`, answered by `D <data>` lines (%-escaped), `OK` or `ERR code text`.
///
/// The passphrase goes from the `D` lines into guarded memory, is %-unescaped there, and the
/// read buffer is wiped: it is never a Swift `String`, in argv, in the environment or in an error.
/// The program talks to this process over a socket pair (its standard input and output), so a
/// program that goes away is an error here, never a SIGPIPE.
public struct Pinentry: Sendable {
    /// Why no passphrase came. Descriptions name the program, never what it sent in a `D` line.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// No such program, or not an executable file (named, or not found on `PATH`).
        case notFound(String)
        /// The user cancelled (`ERR 83886179`, GPG_ERR_CANCELED from pinentry) or closed the dialog.
        case cancelled
        /// Pinentry's own timeout, or no answer within `timeout` seconds (the program is killed).
        case timedOut
        /// `ERR` with another code: the code and pinentry's text (printable ASCII, at most 160 bytes).
        case refused(code: UInt32, text: String)
        /// The program broke the protocol (no greeting, a line it may not send, too long a
        /// passphrase, the end of its output before `OK`): what was expected.
        case brokeProtocol(String)

        public var description: String {
            switch self {
            case .notFound(let p): return "no pinentry program \(p) (not found on PATH, or not an executable file)"
            case .cancelled: return "pinentry was cancelled: no passphrase was given"
            case .timedOut: return "pinentry gave no passphrase in time"
            case .refused(let code, let text): return "pinentry refused (ERR \(code)\(text.isEmpty ? "" : " " + text))"
            case .brokeProtocol(let what): return "pinentry broke the Assuan protocol: \(what)"
            }
        }
    }

    /// The program's absolute path.
    public let program: String
    /// Seconds the whole exchange may take, the user's typing included.
    public var timeout: Int = 300
    /// The terminal a text pinentry (curses, tty) asks on: `OPTION ttyname`.
    public var terminal: String? = Pinentry.currentTerminal()
    /// What the program runs with: the session's display, bus, terminal type and locale
    /// (`Pinentry.passedEnvironment`), none of them a secret.
    public var environment: [String] = Pinentry.passedEnvironment()

    /// The largest passphrase taken; a longer one is a protocol error.
    public static let maximumLength = 4096
    /// The program `--pinentry` runs when it names none: Debian's alternative `pinentry`.
    public static let defaultProgram = "pinentry"

    /// - Throws: `Failure.notFound` when `program` (a path, or a name looked up on `PATH`) is
    ///   not an executable file.
    public init(program: String) throws(Failure) {
        guard let path = Self.locate(program) else { throw .notFound(program) }
        self.program = path
    }

    /// Whether the program a vault's setting names may run as this user: owned by root or by
    /// this user, and not writable by group or others. The setting is the vault owner's; on a
    /// shared vault a member would otherwise run a program another user can change, and type
    /// the passphrase into it.
    public static func mayRunSetting(_ program: String) -> Bool {
        guard let status = try? FileSystem.status(of: program) else { return false }
        let owner = status.owner == 0 || status.owner == CurrentProcess.effectiveUserID
        return owner && status.permissions.rawValue & 0o022 == 0
    }

    /// The absolute path of `program`: itself when it contains a `/`, else the first executable
    /// file of that name in a directory of `$PATH` (else /usr/local/bin:/usr/bin:/bin).
    public static func locate(_ program: String) -> String? {
        func executable(_ path: String) -> Bool {
            (try? FileSystem.status(of: path))?.isExecutableFile == true
        }
        guard !program.isEmpty else { return nil }
        if program.contains("/") {
            guard executable(program) else { return nil }
            return program.hasPrefix("/") ? program : Paths.canonical(program)
        }
        let path = CurrentProcess.environment("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") where dir.hasPrefix("/") {
            let candidate = dir + "/" + program
            if executable(candidate) { return candidate }
        }
        return nil
    }

    /// The environment variables passed on: what a desktop or text pinentry needs to find its
    /// display, session bus, terminal and language.
    public static let passedNames = ["PATH", "HOME", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR",
                                     "XDG_SESSION_TYPE", "DBUS_SESSION_BUS_ADDRESS", "TERM", "LANG", "LC_ALL",
                                     "LC_CTYPE", "LC_MESSAGES", "GPG_TTY", "PINENTRY_USER_DATA"]

    public static func passedEnvironment() -> [String] {
        passedNames.compactMap { name in CurrentProcess.environment(name).map { name + "=" + $0 } }
    }

    /// This process's terminal: that of standard input, output or error, else `$GPG_TTY` (as
    /// GnuPG asks users to set), else the controlling terminal /proc names when it is a pty.
    public static func currentTerminal() -> String? {
        for fd: Int32 in [0, 1, 2] {
            if let path = FileDescriptor(rawValue: fd).terminalPath { return path }
        }
        if let tty = CurrentProcess.environment("GPG_TTY") { return tty }
        // /proc/self/stat field 7, tty_nr: major 136-143 are /dev/pts/N.
        guard let stat = try? FileSystem.contents(of: "/proc/self/stat", limit: 4096),
              let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 4, let nr = Int(String(decoding: fields[4], as: UTF8.self)), nr != 0 else { return nil }
        let major = (nr >> 8) & 0xfff, minor = (nr & 0xff) | ((nr >> 12) & 0xfff00)
        guard (136...143).contains(major) else { return nil }
        return "/dev/pts/\((major - 136) * 256 + minor)"
    }

    /// Asks for a passphrase. - Parameters: `title`, `description` and `prompt` are shown by
    /// the program (sent %-escaped); `error` is shown above the prompt (`SETERROR`), for a retry.
    /// - Returns: the passphrase in guarded memory (it may be empty).
    /// - Throws: `Failure` as its cases say; `CryptoError.allocationFailed` without guarded memory.
    public func askPassphrase(title: String, description: String, prompt: String, error: String? = nil) throws -> SecureBytes {
        let (mine, theirs): (FileDescriptor, FileDescriptor)
        do { (mine, theirs) = try FileDescriptor.unixStreamPair() } catch {
            throw Failure.brokeProtocol("no socket to talk to it (\(error))")
        }
        defer { try? mine.close() }
        let pid: Int32
        do {
            pid = try ChildProcess.spawn([program], environment: environment, setup: [
                .duplicate(theirs, as: 0), .duplicate(theirs, as: 1),
                .open(2, path: "/dev/null", .writeOnly), .closeFrom(3),
            ])
        } catch {
            try? theirs.close()
            throw Failure.notFound(program)
        }
        try? theirs.close()
        var session = AssuanSession(socket: mine, deadline: monotonicSeconds() + Double(max(timeout, 1)))
        defer {
            // Goodbye in every case (a cancelled pinentry waits for more commands), then collected.
            if !session.sawEnd { try? session.send("BYE") }
            Self.reap(pid)
        }

        try session.expectOK(what: "the greeting")
        if let terminal { try session.command("OPTION ttyname=" + terminal, optional: true) }
        if let type = CurrentProcess.environment("TERM") { try session.command("OPTION ttytype=" + type, optional: true) }
        if let ctype = CurrentProcess.environment("LC_ALL") ?? CurrentProcess.environment("LC_CTYPE") ?? CurrentProcess.environment("LANG") {
            try session.command("OPTION lc-ctype=" + ctype, optional: true)
        }
        try session.command("SETTITLE " + Self.escape(title))
        try session.command("SETDESC " + Self.escape(description))
        try session.command("SETPROMPT " + Self.escape(prompt))
        if let error { try session.command("SETERROR " + Self.escape(error)) }
        return try session.getPin()
    }

    /// Assuan's %-escaping of a command's text: `%`, CR, LF and the other control bytes as
    /// `%XX`; everything else (UTF-8 included) as it is.
    public static func escape(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for b in text.utf8 {
            if b == UInt8(ascii: "%") || b < 0x20 || b == 0x7f {
                bytes += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Collects the program once it has ended, or kills it after a second (one that hangs).
    private static func reap(_ pid: Int32) {
        let until = monotonicSeconds() + 1
        while monotonicSeconds() < until {
            if ChildProcess.statusIfEnded(pid) != nil { return }
            SystemClock.sleep(microseconds: 5_000)
        }
        try? TerminationSignals.kill(pid)
        _ = ChildProcess.waitForExit(pid)
    }
}

/// One exchange with a pinentry: lines out, lines in through a guarded buffer.
struct AssuanSession {
    let socket: FileDescriptor
    let deadline: Double
    /// Bytes received and not yet taken as lines; guarded, since a `D` line passes through it.
    private var buffer: SecureBytes?
    private var filled = 0
    private(set) var sawEnd = false

    /// Assuan's longest line, 1000 bytes with its newline; room for a little more is kept.
    static let lineLimit = 1002

    init(socket: FileDescriptor, deadline: Double) {
        self.socket = socket
        self.deadline = deadline
    }

    mutating func send(_ line: String) throws {
        let bytes = Array((line + "\n").utf8)
        guard bytes.count <= 1000 else { throw Pinentry.Failure.brokeProtocol("a command of ours is longer than Assuan allows") }
        do { try bytes.withUnsafeBytes { b in try socket.sendAll(b) } } catch {
            throw Pinentry.Failure.brokeProtocol("it went away before it answered")
        }
    }

    /// Sends a command and waits for its `OK`. An `ERR` of an `optional` command (an `OPTION`
    /// the program does not know) is let go.
    mutating func command(_ line: String, optional: Bool = false) throws {
        try send(line)
        do { try expectOK(what: "the answer to \(line.prefix { $0 != " " })") } catch Pinentry.Failure.refused(_, _) where optional {}
    }

    /// Reads lines until `OK`, skipping comments and status lines. - Throws: `Failure` for `ERR`,
    /// a `D` line, an `INQUIRE` or anything else.
    mutating func expectOK(what: String) throws {
        while true {
            let kind = try nextLine { line in Self.classify(line) }
            switch kind {
            case .ok: return
            case .skip: continue
            case .error(let code, let text): throw Self.failure(code: code, text: text)
            case .data: throw Pinentry.Failure.brokeProtocol("data where \(what) was expected")
            case .other(let word): throw Pinentry.Failure.brokeProtocol("\(word.isEmpty ? "an empty line" : "\"\(word)\"") where \(what) was expected")
            }
        }
    }

    /// `GETPIN`: every `D` line's data, unescaped, into one guarded buffer, until `OK`.
    mutating func getPin() throws -> SecureBytes {
        try send("GETPIN")
        let pin = try SecureBytes(count: Pinentry.maximumLength)
        var length = 0
        while true {
            let kind = try nextLine { line -> LineKind in
                let kind = Self.classify(line)
                guard case .data = kind else { return kind }
                // Unescaped straight from the guarded line into the guarded passphrase.
                let added = pin.withUnsafeMutableBytes { out in Self.unescape(line.dropFirst(2), into: out, at: length) }
                guard let added else { return .other("a D line too long or badly escaped") }
                length += added
                return .data
            }
            switch kind {
            case .ok: return try pin.slice(0..<length)
            case .skip, .data: continue
            case .error(let code, let text): throw Self.failure(code: code, text: text)
            case .other(let word): throw Pinentry.Failure.brokeProtocol("\(word.isEmpty ? "an empty line" : "\"\(word)\"") in its answer to GETPIN")
            }
        }
    }

    enum LineKind { case ok, skip, data, error(UInt32, String), other(String) }

    /// What a line is; for a line that is none of Assuan's answers, its first word (at most 16
    /// printable bytes) and never more: a pinentry that misplaces the passphrase must not have
    /// it shown in an error.
    static func classify(_ line: UnsafeRawBufferPointer) -> LineKind {
        func starts(_ word: String) -> Bool {
            let w = Array(word.utf8)
            return line.count >= w.count && zip(line.prefix(w.count), w).allSatisfy { $0 == $1 }
                && (line.count == w.count || line[w.count] == UInt8(ascii: " "))
        }
        if starts("OK") { return .ok }
        if starts("#") || starts("S") { return .skip }
        if line.first == UInt8(ascii: "#") { return .skip }
        if starts("D") { return .data }
        if starts("ERR") {
            let rest = line.dropFirst(4)
            let digits = rest.prefix { $0 >= 0x30 && $0 <= 0x39 }
            let code = UInt32(String(decoding: digits.prefix(10), as: UTF8.self)) ?? 0
            let text = rest.dropFirst(digits.count).drop { $0 == UInt8(ascii: " ") }.prefix(160).filter { $0 >= 0x20 && $0 < 0x7f }
            return .error(code, String(decoding: text, as: UTF8.self))
        }
        let word = line.prefix { $0 != UInt8(ascii: " ") }.prefix(16).filter { $0 >= 0x21 && $0 < 0x7f }
        return .other(String(decoding: word, as: UTF8.self))
    }

    /// Cancelled (GPG_ERR_CANCELED 99, GPG_ERR_FULLY_CANCELED 198) or timed out (GPG_ERR_TIMEOUT
    /// 62), whatever the error source in the code's high byte; else refused.
    static func failure(code: UInt32, text: String) -> Pinentry.Failure {
        switch code & 0xffff {
        case 99, 198: return .cancelled
        case 62: return .timedOut
        default: return .refused(code: code, text: text)
        }
    }

    /// Decodes %XX escapes of `data` into `out` from `offset`. Returns the bytes written, or nil
    /// when they do not fit or an escape is not two hex digits.
    static func unescape(_ data: Slice<UnsafeRawBufferPointer>, into out: UnsafeMutableRawBufferPointer, at offset: Int) -> Int? {
        func hex(_ b: UInt8) -> UInt8? {
            switch b {
            case 0x30...0x39: return b - 0x30
            case 0x41...0x46: return b - 0x41 + 10
            case 0x61...0x66: return b - 0x61 + 10
            default: return nil
            }
        }
        var i = data.startIndex, n = offset
        while i < data.endIndex {
            guard n < out.count else { return nil }
            var b = data[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < data.endIndex, let hi = hex(data[i + 1]), let lo = hex(data[i + 2]) else { return nil }
                b = hi << 4 | lo
                i += 2
            }
            out[n] = b
            n += 1
            i += 1
        }
        return n - offset
    }

    /// Reads up to the next newline and hands the line (without it) to `body`, in place in the
    /// guarded buffer; the line's bytes are wiped once `body` returns.
    mutating func nextLine<R>(_ body: (UnsafeRawBufferPointer) -> R) throws -> R {
        if buffer == nil { buffer = try SecureBytes(count: Self.lineLimit) }
        let buffer = buffer!
        while true {
            if let newline = buffer.withUnsafeBytes({ b in (0..<filled).first { b[$0] == 10 } }) {
                let result = buffer.withUnsafeBytes { b in body(UnsafeRawBufferPointer(rebasing: b[0..<newline])) }
                buffer.withUnsafeMutableBytes { b in
                    let rest = filled - newline - 1
                    if rest > 0 { b.baseAddress!.copyMemory(from: b.baseAddress! + newline + 1, byteCount: rest) }
                    wipeMemory(UnsafeMutableRawBufferPointer(rebasing: b[rest..<b.count]))
                    filled = rest
                }
                return result
            }
            guard filled < buffer.count else { throw Pinentry.Failure.brokeProtocol("a line longer than Assuan's 1000 bytes") }
            let left = deadline - monotonicSeconds()
            guard left > 0, (try? socket.waitUntilReadable(timeoutMilliseconds: Int32(min(left, 3_600) * 1000))) == true else {
                throw Pinentry.Failure.timedOut
            }
            let n: Int
            do {
                let start = filled
                n = try buffer.withUnsafeMutableBytes { b in
                    try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: b[start..<b.count]))
                }
            } catch {
                throw Pinentry.Failure.brokeProtocol("its output could not be read (\(error))")
            }
            if n == 0 {
                sawEnd = true
                throw Pinentry.Failure.brokeProtocol("it ended before it answered")
            }
            filled += n
        }
    }
}
