import Glibc
import KeychainCore

extension KeychainStatus {
    /// What a request answers when a record it needs first (an audit line, the back-off state)
    /// could not be written: errSecDiskFull for a full file system or quota (ENOSPC, EDQUOT),
    /// errSecIO for any other failure.
    static func writeFailure(_ e: Int32) -> KeychainStatus { e == ENOSPC || e == EDQUOT ? .diskFull : .io }
}
