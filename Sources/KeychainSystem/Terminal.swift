import CProcess
import Glibc

/// Terminals: whether a descriptor is one, and reading from one without echo.
extension FileDescriptor {
    /// True when the descriptor is a terminal (isatty(3)).
    public var isTerminal: Bool { isatty(rawValue) == 1 }

    /// The path of the terminal the descriptor is (ttyname(3)); nil when it is none.
    public var terminalPath: String? {
        guard isTerminal, let name = ttyname(rawValue) else { return nil }
        return String(cString: name)
    }

    /// Runs `body` with the terminal's echo off (tcsetattr(3) `TCSAFLUSH`, `ECHO` cleared), then
    /// puts the settings back, also when `body` throws. On a descriptor that is not a terminal
    /// `body` just runs.
    public func withEchoOff<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        var saved = termios()
        let isTerminal = tcgetattr(rawValue, &saved) == 0
        if isTerminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            _ = retryingOnInterrupt { tcsetattr(rawValue, TCSAFLUSH, &quiet) }
        }
        defer { if isTerminal { _ = retryingOnInterrupt { tcsetattr(rawValue, TCSAFLUSH, &saved) } } }
        return try body()
    }

    /// A new pseudo-terminal: the controller end (what a terminal emulator holds) and the
    /// terminal end a program reads and writes (posix_openpt(3)); both close-on-exec.
    public static func openPseudoTerminal() throws(Errno) -> (controller: FileDescriptor, terminal: FileDescriptor) {
        var terminal: Int32 = -1
        let controller = try systemCall { kcfs_open_pty(&terminal) }
        return (FileDescriptor(rawValue: controller), FileDescriptor(rawValue: terminal))
    }
}
