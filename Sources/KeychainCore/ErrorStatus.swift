import KeychainModel
import SQLiteStore

/// The store's errors: a full disk is errSecDiskFull; the others are the engine's to report.
extension SQLiteError: KeychainStatusConvertibleInPart {
    public var statusIfKnown: KeychainStatus? { isDiskFull ? .diskFull : nil }
}
