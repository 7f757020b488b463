import KeychainCore
import KeychainSystem

extension KeychainStatus {
    /// What a request answers when a record it needs first (an audit line, the back-off state)
    /// could not be written: errSecDiskFull for a full file system or quota (ENOSPC, EDQUOT),
    /// errSecIO for any other failure.
    static func writeFailure(_ e: Errno) -> KeychainStatus { e == .noSpace || e == .diskQuotaExceeded ? .diskFull : .io }

    /// `writeFailure` of a bare errno.
    static func writeFailure(_ e: Int32) -> KeychainStatus { writeFailure(Errno(rawValue: e)) }

    /// Runs `body`, whose failure is thrown as `writeFailure` of its errno.
    static func writing<R>(_ body: () throws(Errno) -> R) throws(KeychainStatus) -> R {
        do throws(Errno) { return try body() } catch { throw writeFailure(error) }
    }
}
