import KeychainCrypto

// Running out of guarded memory says nothing about the data being opened. Where a failure to
// open means "damaged" or "wrong passphrase", an allocation failure must not pass for one (a
// caller who used up the budget would otherwise make unlocks count as wrong guesses): it
// becomes `KeychainStatus.allocate`.

/// True for `CryptoError.allocationFailed` and `KeychainStatus.allocate`.
public func isAllocationFailure(_ error: Error) -> Bool {
    (error as? CryptoError) == .allocationFailed || (error as? KeychainStatus) == .allocate
}

/// `try?` for opening stored data: nil when it does not open, but
/// - Throws: `KeychainStatus.allocate` when guarded memory ran out.
package func nilUnlessOutOfMemory<T>(_ body: () throws -> T) throws -> T? {
    do { return try body() } catch {
        if isAllocationFailure(error) { throw KeychainStatus.allocate }
        return nil
    }
}

/// Runs `body` for a caller that reports statuses: `CryptoError.allocationFailed` becomes
/// `KeychainStatus.allocate`; other errors pass unchanged.
public func mapAllocationFailure<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch CryptoError.allocationFailed { throw KeychainStatus.allocate }
}
