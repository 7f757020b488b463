import Dispatch
import Glibc

/// SIGTERM, SIGINT and SIGHUP as events, for a server that must clean up (remove its socket)
/// before it ends, and the one call that sends SIGTERM.
public enum TerminationSignals {
    private static let sources = Locked<[DispatchSourceSignal]>([])

    /// Calls `body` with the signal's number on a Dispatch queue each time one of them arrives;
    /// their default action (ending the process at once) is turned off.
    public static func handle(_ body: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "keychainfs.termination")
        for number in [SIGTERM, SIGINT, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { body(number) }
            source.resume()
            sources.withLock { $0.append(source) }
        }
    }

    /// Sends SIGTERM to `pid` (kill(2)). - Throws: `ESRCH` when it has ended, `.notPermitted`.
    public static func terminate(_ pid: Int32) throws(Errno) {
        _ = try systemCall { Glibc.kill(pid, SIGTERM) }
    }

    /// Sends SIGKILL to `pid` (kill(2)): for a child that did not end when asked.
    /// - Throws: `ESRCH` when it has ended, `.notPermitted`.
    public static func kill(_ pid: Int32) throws(Errno) {
        _ = try systemCall { Glibc.kill(pid, SIGKILL) }
    }
}
