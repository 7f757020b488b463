import KeychainCore
import KeychainSystem

/// The floor under fleet sync's propagation latency, for the benchmark (bench/sync.sh): one
/// connection LISTENs, another INSERTs a row and NOTIFYs in one transaction, as a sync write
/// does, and the time until the listener has the notification is one round trip. No keychainfs
/// code runs in between: what is left above it in a sync figure is keychainfs's.
public enum NotifyBaseline {
    /// `count` round trips on a scratch table (`keychainfs_bench_notify`, dropped after).
    /// - Returns: seconds per round trip. - Throws: `PostgresError`.
    public static func roundTrips(conninfo: String, count: Int) throws -> [Double] {
        let listener = try PGConnection(conninfo: conninfo), writer = try PGConnection(conninfo: conninfo)
        let channel = "keychainfs_bench_\(CurrentProcess.id)"
        try writer.exec("CREATE TABLE IF NOT EXISTS keychainfs_bench_notify(n int8 PRIMARY KEY, payload bytea NOT NULL)")
        defer { _ = try? writer.exec("DROP TABLE IF EXISTS keychainfs_bench_notify") }
        try listener.exec("LISTEN \(channel)")
        let payload = [UInt8](repeating: 0x5a, count: 482)  // the size of a small sync record
        var out: [Double] = []
        for n in 0..<count {
            let t0 = monotonicSeconds()
            try writer.transaction {
                try writer.exec("INSERT INTO keychainfs_bench_notify(n, payload) VALUES($1, $2)", [.int(Int64(n)), .bytes(payload)])
                try writer.exec("SELECT pg_notify($1, $2)", [.text(channel), .text(String(n))])
            }
            var heard = false
            while !heard {
                _ = try? FileDescriptor(rawValue: listener.socket).waitUntilReadable(timeoutMilliseconds: 1000)
                heard = !(try listener.notifications()).isEmpty
            }
            out.append(monotonicSeconds() - t0)
        }
        return out
    }
}
