import KeychainKeys

// CommonCrypto/CommonRandom.h over KeychainKeys' `SystemRandom` (libcrypto's `RAND_bytes`).

public typealias CCRNGStatus = CCCryptorStatus

/// Fills `count` bytes at `bytes` from the CSPRNG.
/// - Returns: kCCSuccess; kCCParamError for a nil buffer with a non-zero count; kCCRNGFailure
///   when the generator fails.
@discardableResult
public func CCRandomGenerateBytes(_ bytes: UnsafeMutableRawPointer!, _ count: Int) -> CCRNGStatus {
    guard count >= 0, bytes != nil || count == 0 else { return status(kCCParamError) }
    return status(SystemRandom.fill(bytes, count: count) ? kCCSuccess : kCCRNGFailure)
}
