import KeychainKeys

// CommonCrypto/CommonHMAC.h over KeychainKeys' `MessageAuthentication` (libcrypto's `HMAC`) and
// `HMACContext` (`EVP_MAC_CTX`). Keys are read where the caller keeps them.

public typealias CCHmacAlgorithm = UInt32

public let kCCHmacAlgSHA1: Int = 0
public let kCCHmacAlgMD5: Int = 1
public let kCCHmacAlgSHA256: Int = 2
public let kCCHmacAlgSHA384: Int = 3
public let kCCHmacAlgSHA512: Int = 4
public let kCCHmacAlgSHA224: Int = 5

public let CC_HMAC_CONTEXT_SIZE: Int32 = 96

/// `CCHmacContext`: declare with `CCHmacContext()`, pass as `&ctx`. A value with copy-on-write,
/// so that a copy forks the running MAC; libcrypto's context is freed by `CCHmacFinal`.
public struct CCHmacContext {
    private var context: HMACContext?

    public init() {}
    init(_ context: HMACContext?) { self.context = context }

    mutating func update(_ data: UnsafeRawPointer?, _ count: Int) {
        _ = unique()?.update(data, count: count)
    }

    mutating func finish(_ out: UnsafeMutableRawPointer?) {
        guard let out, let context = unique() else { return }
        self.context = nil
        _ = context.finish(into: out)
    }

    private mutating func unique() -> HMACContext? {
        guard context != nil else { return nil }
        if !isKnownUniquelyReferenced(&context) { context = context?.copy() }
        return context
    }
}

public typealias CCHmacContextRef = UnsafeMutablePointer<CCHmacContext>

/// The hash function of a `CCHmacAlgorithm`, nil for an unknown one.
func hmacFunction(_ algorithm: CCHmacAlgorithm) -> HashFunction? {
    switch Int(algorithm) {
    case kCCHmacAlgSHA1: return .sha1
    case kCCHmacAlgMD5: return .md5
    case kCCHmacAlgSHA256: return .sha256
    case kCCHmacAlgSHA384: return .sha384
    case kCCHmacAlgSHA512: return .sha512
    case kCCHmacAlgSHA224: return .sha224
    default: return nil
    }
}

/// Starts an HMAC in `ctx`. Written with `initialize(to:)`, as memory callers allocated and never
/// initialized is allowed here as in C; a context still running there is dropped unreleased.
/// An unknown algorithm leaves a context whose Update and Final do nothing.
public func CCHmacInit(_ ctx: UnsafeMutablePointer<CCHmacContext>!, _ algorithm: CCHmacAlgorithm,
                       _ key: UnsafeRawPointer!, _ keyLength: Int) {
    guard let ctx else { return }
    let context = hmacFunction(algorithm).flatMap { HMACContext($0, key: key, keyCount: keyLength) }
    ctx.initialize(to: CCHmacContext(context))
}

public func CCHmacUpdate(_ ctx: UnsafeMutablePointer<CCHmacContext>!, _ data: UnsafeRawPointer!, _ dataLength: Int) {
    ctx?.pointee.update(data, dataLength)
}

/// Writes the MAC (the digest length of the algorithm) to `macOut` and frees libcrypto's context.
public func CCHmacFinal(_ ctx: UnsafeMutablePointer<CCHmacContext>!, _ macOut: UnsafeMutableRawPointer!) {
    ctx?.pointee.finish(macOut)
}

/// One-shot HMAC into `macOut` (the digest length of the algorithm): one libcrypto `HMAC` call.
public func CCHmac(_ algorithm: CCHmacAlgorithm, _ key: UnsafeRawPointer!, _ keyLength: Int,
                   _ data: UnsafeRawPointer!, _ dataLength: Int, _ macOut: UnsafeMutableRawPointer!) {
    guard let function = hmacFunction(algorithm), let macOut else { return }
    _ = MessageAuthentication.hmac(function, key: key, keyCount: keyLength, data: data, count: dataLength, into: macOut)
}
