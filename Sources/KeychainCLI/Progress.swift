import KeychainProtocol
import KeychainSystem

/// One line on standard error before a wait a person would otherwise sit through in silence
/// (a sensitive key derivation, an unlock back-off); only on a terminal, never with `--quiet`,
/// so scripts and logs see nothing.
package enum Progress {
    package static func enabled(_ args: Arguments) -> Bool { FileDescriptor.standardError.isTerminal && !args.has("--quiet") }

    package static func say(_ args: Arguments, _ text: String) {
        if enabled(args) { Terminal.warn(text) }
    }

    /// The 1 GiB Argon2id preset takes seconds per derivation on a desktop core.
    package static let slowKDFBytes: Int64 = 1 << 30

    /// Seconds until the daemon takes this uid's next unlock attempt, from the back-off count it
    /// keeps beside its socket (`UID FAILURES LAST-FAILURE-UNIX-MILLIS` lines); 0 when none or
    /// unreadable. Only for the message: the daemon enforces the wait.
    static func backOffSeconds(vault: String) -> Int {
        guard let fd = try? FileDescriptor.open(Paths.lockoutFile(forVault: vault), .readOnly, options: .noFollow) else { return 0 }
        defer { try? fd.close() }
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = (try? buf.withUnsafeMutableBytes { try fd.read(into: $0) }) ?? -1
        guard n > 0 else { return 0 }
        let now = SystemClock.realtime()
        let nowMillis = Int(now.seconds * 1000 + now.nanoseconds / 1_000_000)
        for line in String(decoding: buf[0..<n], as: UTF8.self).split(separator: "\n") {
            let f = line.split(separator: " ").compactMap { Int($0) }
            guard f.count == 3, f[0] == Int(CurrentProcess.userID), f[1] > 0 else { continue }
            let until = f[2] + min(1 << min(f[1] - 1, 6), 60) * 1000
            return max(0, (until - nowMillis + 999) / 1000)
        }
        return 0
    }
}
