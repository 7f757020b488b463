import KeychainKeys

// CommonCrypto/CommonKeyDerivation.h: PBKDF2 over KeychainKeys' `PasswordKDF`
// (`PKCS5_PBKDF2_HMAC`): the password and salt are read where the caller keeps them and the key
// written straight to `derivedKey`.

public typealias CCPBKDFAlgorithm = UInt32
public let kCCPBKDF2: Int = 2

public typealias CCPseudoRandomAlgorithm = UInt32
public let kCCPRFHmacAlgSHA1: Int = 1
public let kCCPRFHmacAlgSHA224: Int = 2
public let kCCPRFHmacAlgSHA256: Int = 3
public let kCCPRFHmacAlgSHA384: Int = 4
public let kCCPRFHmacAlgSHA512: Int = 5

private func prfFunction(_ prf: CCPseudoRandomAlgorithm) -> HashFunction? {
    switch Int(prf) {
    case kCCPRFHmacAlgSHA1: return .sha1
    case kCCPRFHmacAlgSHA224: return .sha224
    case kCCPRFHmacAlgSHA256: return .sha256
    case kCCPRFHmacAlgSHA384: return .sha384
    case kCCPRFHmacAlgSHA512: return .sha512
    default: return nil
    }
}

/// PBKDF2 with HMAC-`prf`: `derivedKeyLen` bytes into `derivedKey`.
/// - Returns: kCCSuccess; kCCParamError for an algorithm other than kCCPBKDF2, an unknown `prf`,
///   a nil password, salt or output, an empty output, zero rounds, or lengths over 2^31 - 1.
@discardableResult
public func CCKeyDerivationPBKDF(_ algorithm: CCPBKDFAlgorithm, _ password: UnsafePointer<CChar>!, _ passwordLen: Int,
                                 _ salt: UnsafePointer<UInt8>!, _ saltLen: Int, _ prf: CCPseudoRandomAlgorithm,
                                 _ rounds: UInt32, _ derivedKey: UnsafeMutablePointer<UInt8>!,
                                 _ derivedKeyLen: Int) -> Int32 {
    guard algorithm == CCPBKDFAlgorithm(kCCPBKDF2), let function = prfFunction(prf),
          password != nil, salt != nil, let derivedKey, derivedKeyLen > 0, rounds > 0 else { return status(kCCParamError) }
    let ok = PasswordKDF.pbkdf2(function, password: password, passwordCount: passwordLen, salt: salt, saltCount: saltLen,
                                rounds: rounds, into: derivedKey, count: derivedKeyLen)
    return status(ok ? kCCSuccess : kCCParamError)
}

/// The number of rounds that take about `msec` milliseconds here for these lengths, measured by
/// deriving with 10,000 rounds. UInt32.max (Apple's -1) for bad parameters.
public func CCCalibratePBKDF(_ algorithm: CCPBKDFAlgorithm, _ passwordLen: Int, _ saltLen: Int,
                             _ prf: CCPseudoRandomAlgorithm, _ derivedKeyLen: Int, _ msec: UInt32) -> UInt32 {
    let bad = UInt32.max
    guard algorithm == CCPBKDFAlgorithm(kCCPBKDF2), let function = prfFunction(prf), derivedKeyLen > 0,
          saltLen > 0, saltLen <= 132, passwordLen >= 0, derivedKeyLen <= 1 << 20 else { return bad }
    let password = [CChar](repeating: 0x61, count: max(passwordLen, 1))
    let salt = (0..<saltLen).map { UInt8(truncatingIfNeeded: $0) }
    var out = [UInt8](repeating: 0, count: derivedKeyLen)
    let measured: UInt32 = 10_000
    var ok = false
    let elapsed = ContinuousClock().measure {
        ok = out.withUnsafeMutableBytes { dst in
            PasswordKDF.pbkdf2(function, password: password, passwordCount: password.count, salt: salt, saltCount: saltLen,
                               rounds: measured, into: dst.baseAddress!, count: derivedKeyLen)
        }
    }
    guard ok else { return bad }
    let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    guard ms > 0 else { return bad }
    return UInt32(clamping: Int((Double(msec) * Double(measured) / ms).rounded()))
}
