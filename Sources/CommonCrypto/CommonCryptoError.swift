// `import CommonCrypto` on Linux: Apple's C API (CommonCrypto/CommonCryptoError.h and the other
// headers) as Swift declarations over libcrypto, through KeychainKeys. Names, types, values and
// parameter shapes are those of Apple's Swift import of the headers, so that Apple-platform code
// compiles unchanged: anonymous C enums are `Int` constants, `#define`d numbers `Int32`, `size_t`
// is `Int`, pointers are unlabeled optionals. docs/commoncrypto.md lists what is supported.

/// A CommonCrypto status (`int32_t`).
public typealias CCStatus = Int32
/// A `CCCryptor` status, the same values.
public typealias CCCryptorStatus = Int32

// CommonCryptoError.h, with Apple's values.
public let kCCSuccess: Int = 0
/// Illegal parameter value.
public let kCCParamError: Int = -4300
/// Insufficient buffer provided for specified operation.
public let kCCBufferTooSmall: Int = -4301
/// Memory allocation failure.
public let kCCMemoryFailure: Int = -4302
/// Input size was not aligned properly.
public let kCCAlignmentError: Int = -4303
/// Input data did not decode or decrypt properly.
public let kCCDecodeError: Int = -4304
/// Function not implemented for the current algorithm.
public let kCCUnimplemented: Int = -4305
public let kCCOverflow: Int = -4306
public let kCCRNGFailure: Int = -4307
public let kCCUnspecifiedError: Int = -4308
public let kCCCallSequenceError: Int = -4309
public let kCCKeySizeError: Int = -4310
/// Key is not valid.
public let kCCInvalidKey: Int = -4311

/// A status as the `Int32` the functions return.
@inline(__always)
func status(_ value: Int) -> CCCryptorStatus { CCCryptorStatus(value) }
