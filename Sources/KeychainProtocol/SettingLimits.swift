/// The accepted range of every number a caller may send the daemon. The CLI refuses a value
/// outside its range with a usage error (exit 2) and the daemon with errSecParam, so no
/// setting can be stored that later overflows a computation (docs/cli.md, "Numeric ranges").
public enum SettingLimits {
    /// `set-keychain-settings -t`: idle seconds before the vault locks; 0 never locks. At most a
    /// (365-day) year.
    public static let lockTimeout: ClosedRange<Int64> = 0...31_536_000
    /// `--approval-timeout`: seconds an approval program may run; an hour at most.
    public static let approvalTimeout: ClosedRange<Int64> = 1...3_600
    /// `--approval-remember`: seconds an approval is kept; 0 asks every time; a day at most.
    public static let approvalRemember: ClosedRange<Int64> = 0...86_400
    /// `-P`: a TCP or UDP port.
    public static let port: ClosedRange<Int64> = 0...65_535
    /// `--owner`, `--group`, `--map-owner`: a uid or gid; 4294967295 is (uid_t)-1, "no id".
    public static let id: ClosedRange<Int64> = 0...4_294_967_294
    /// `--mode`: permission bits of an access group (read and write for owner, group, others).
    public static let groupMode: ClosedRange<Int64> = 0...0o777
    /// `--audit-max-size`: bytes of the audit log's current file past which it rotates (0 never
    /// rotates). At least 4 KiB, so that a rotation's own line never fills a file; at most 1 TiB.
    public static let auditMaxSize: ClosedRange<Int64> = 4_096...1_099_511_627_776
    /// Bytes of an access group name.
    public static let groupNameBytes: ClosedRange<Int> = 1...255
}

extension ClosedRange where Bound == Int64 {
    /// `n` moved into the range: for a value stored before the range was enforced.
    public func clamp(_ n: Int64) -> Int64 { Swift.min(Swift.max(n, lowerBound), upperBound) }
}
