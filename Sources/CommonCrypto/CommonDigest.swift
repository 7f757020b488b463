import KeychainKeys

// CommonCrypto/CommonDigest.h: one-shot digests and the Init/Update/Final contexts, over
// KeychainKeys' `HashFunction` (`EVP_Digest`) and `DigestContext` (`EVP_MD_CTX`).

public typealias CC_LONG = UInt32
public typealias CC_LONG64 = UInt64

public let CC_MD5_DIGEST_LENGTH: Int32 = 16
public let CC_MD5_BLOCK_BYTES: Int32 = 64
public let CC_SHA1_DIGEST_LENGTH: Int32 = 20
public let CC_SHA1_BLOCK_BYTES: Int32 = 64
public let CC_SHA224_DIGEST_LENGTH: Int32 = 28
public let CC_SHA224_BLOCK_BYTES: Int32 = 64
public let CC_SHA256_DIGEST_LENGTH: Int32 = 32
public let CC_SHA256_BLOCK_BYTES: Int32 = 64
public let CC_SHA384_DIGEST_LENGTH: Int32 = 48
public let CC_SHA384_BLOCK_BYTES: Int32 = 128
public let CC_SHA512_DIGEST_LENGTH: Int32 = 64
public let CC_SHA512_BLOCK_BYTES: Int32 = 128

/// A digest in progress, held by the `CC_*_CTX` structs: a value with copy-on-write, so that
/// `var b = a` forks the running state as copying Apple's C struct does. nil before `_Init` and
/// after `_Final` (which frees libcrypto's context).
struct RunningDigest {
    private var context: DigestContext?

    init() {}
    init(_ function: HashFunction) { context = DigestContext(function) }

    var isStarted: Bool { context != nil }

    mutating func update(_ data: UnsafeRawPointer?, _ count: Int) -> Int32 {
        guard let context = unique() else { return 0 }
        return context.update(data, count: count) ? 1 : 0
    }

    mutating func finish(_ md: UnsafeMutablePointer<UInt8>?) -> Int32 {
        guard let md, let context = unique() else { return 0 }
        self.context = nil
        return context.finish(into: md) ? 1 : 0
    }

    /// The context, copied first when another value shares it.
    private mutating func unique() -> DigestContext? {
        guard context != nil else { return nil }
        if !isKnownUniquelyReferenced(&context) { context = context?.copy() }
        return context
    }
}

/// What the four context structs share.
protocol DigestContextStruct {
    init(running: RunningDigest)
    var running: RunningDigest { get set }
}

/// `_Init`: a fresh context. Written with `initialize(to:)` because callers may pass memory they
/// allocated and never initialized (`UnsafeMutablePointer<CC_SHA256_CTX>.allocate(capacity: 1)`),
/// as C allows; a context still running there is then dropped without being released.
@inline(__always)
func digestInit<C: DigestContextStruct>(_ c: UnsafeMutablePointer<C>?, _ function: HashFunction) -> Int32 {
    guard let c else { return 0 }
    let running = RunningDigest(function)
    c.initialize(to: C(running: running))
    return running.isStarted ? 1 : 0
}

@inline(__always)
func digestUpdate<C: DigestContextStruct>(_ c: UnsafeMutablePointer<C>?, _ data: UnsafeRawPointer?, _ len: CC_LONG) -> Int32 {
    guard let c else { return 0 }
    return c.pointee.running.update(data, Int(len))
}

@inline(__always)
func digestFinal<C: DigestContextStruct>(_ md: UnsafeMutablePointer<UInt8>?, _ c: UnsafeMutablePointer<C>?) -> Int32 {
    guard let c else { return 0 }
    return c.pointee.running.finish(md)
}

@inline(__always)
func digest(_ function: HashFunction, _ data: UnsafeRawPointer?, _ len: CC_LONG,
            _ md: UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>? {
    guard let md else { return nil }
    return function.hash(data, count: Int(len), into: md) ? md : nil
}

/// `CC_MD5_CTX`: declare with `CC_MD5_CTX()`, pass as `&ctx`.
public struct CC_MD5_CTX: DigestContextStruct {
    var running: RunningDigest
    public init() { running = RunningDigest() }
    init(running: RunningDigest) { self.running = running }
}

/// `CC_SHA1_CTX`.
public struct CC_SHA1_CTX: DigestContextStruct {
    var running: RunningDigest
    public init() { running = RunningDigest() }
    init(running: RunningDigest) { self.running = running }
}

/// `CC_SHA256_CTX`, also SHA-224's context (as in Apple's header).
public struct CC_SHA256_CTX: DigestContextStruct {
    var running: RunningDigest
    public init() { running = RunningDigest() }
    init(running: RunningDigest) { self.running = running }
}

/// `CC_SHA512_CTX`, also SHA-384's context (as in Apple's header).
public struct CC_SHA512_CTX: DigestContextStruct {
    var running: RunningDigest
    public init() { running = RunningDigest() }
    init(running: RunningDigest) { self.running = running }
}

// MD5: deprecated on Apple's platforms as in Apple's header (macOS 10.15, iOS 13); on Linux the
// attribute names no platform that applies, so no warning, as for an older deployment target.

@available(macOS, introduced: 10.4, deprecated: 10.15, message: "This function is cryptographically broken and should not be used in security contexts. Clients should migrate to SHA256 (or stronger).")
@available(iOS, introduced: 2.0, deprecated: 13.0, message: "This function is cryptographically broken and should not be used in security contexts. Clients should migrate to SHA256 (or stronger).")
@discardableResult
public func CC_MD5_Init(_ c: UnsafeMutablePointer<CC_MD5_CTX>!) -> Int32 { digestInit(c, .md5) }

@available(macOS, introduced: 10.4, deprecated: 10.15, message: "This function is cryptographically broken and should not be used in security contexts. Clients should migrate to SHA256 (or stronger).")
@available(iOS, introduced: 2.0, deprecated: 13.0, message: "This function is cryptographically broken and should not be used in security contexts. Clients should migrate to SHA256 (or stronger).")
@discardableResult
public func CC_MD5_Update(_ c: UnsafeMutablePointer<CC_MD5_CTX>!, _ data: UnsafeRawPointer!, _ len: CC_LONG) -> Int32 {
    digestUpdate(c, data, len)
}

@available(macOS, introduced: 10.4, deprecated: 10.15, message: "This function is cryptographically broken and should not be used in security contexts. Clients should migrate to SHA256 (or stronger).")
@available(iOS, introduced: 2.0, deprecated: 13.0, message: "This function is cryptographically broken and should not be used in security contexts. Clients should migrate to SHA256 (or stronger).")
@discardableResult
public func CC_MD5_Final(_ md: UnsafeMutablePointer<UInt8>!, _ c: UnsafeMutablePointer<CC_MD5_CTX>!) -> Int32 {
    digestFinal(md, c)
}

@available(macOS, introduced: 10.4, deprecated: 10.15, message: "This function is cryptographically broken and should not be used in security contexts. Clients should migrate to SHA256 (or stronger).")
@available(iOS, introduced: 2.0, deprecated: 13.0, message: "This function is cryptographically broken and should not be used in security contexts. Clients should migrate to SHA256 (or stronger).")
@discardableResult
public func CC_MD5(_ data: UnsafeRawPointer!, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>!) -> UnsafeMutablePointer<UInt8>! {
    digest(.md5, data, len, md)
}

// SHA-1

@discardableResult
public func CC_SHA1_Init(_ c: UnsafeMutablePointer<CC_SHA1_CTX>!) -> Int32 { digestInit(c, .sha1) }

@discardableResult
public func CC_SHA1_Update(_ c: UnsafeMutablePointer<CC_SHA1_CTX>!, _ data: UnsafeRawPointer!, _ len: CC_LONG) -> Int32 {
    digestUpdate(c, data, len)
}

@discardableResult
public func CC_SHA1_Final(_ md: UnsafeMutablePointer<UInt8>!, _ c: UnsafeMutablePointer<CC_SHA1_CTX>!) -> Int32 {
    digestFinal(md, c)
}

@discardableResult
public func CC_SHA1(_ data: UnsafeRawPointer!, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>!) -> UnsafeMutablePointer<UInt8>! {
    digest(.sha1, data, len, md)
}

// SHA-224 (a CC_SHA256_CTX)

@discardableResult
public func CC_SHA224_Init(_ c: UnsafeMutablePointer<CC_SHA256_CTX>!) -> Int32 { digestInit(c, .sha224) }

@discardableResult
public func CC_SHA224_Update(_ c: UnsafeMutablePointer<CC_SHA256_CTX>!, _ data: UnsafeRawPointer!, _ len: CC_LONG) -> Int32 {
    digestUpdate(c, data, len)
}

@discardableResult
public func CC_SHA224_Final(_ md: UnsafeMutablePointer<UInt8>!, _ c: UnsafeMutablePointer<CC_SHA256_CTX>!) -> Int32 {
    digestFinal(md, c)
}

@discardableResult
public func CC_SHA224(_ data: UnsafeRawPointer!, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>!) -> UnsafeMutablePointer<UInt8>! {
    digest(.sha224, data, len, md)
}

// SHA-256

@discardableResult
public func CC_SHA256_Init(_ c: UnsafeMutablePointer<CC_SHA256_CTX>!) -> Int32 { digestInit(c, .sha256) }

@discardableResult
public func CC_SHA256_Update(_ c: UnsafeMutablePointer<CC_SHA256_CTX>!, _ data: UnsafeRawPointer!, _ len: CC_LONG) -> Int32 {
    digestUpdate(c, data, len)
}

@discardableResult
public func CC_SHA256_Final(_ md: UnsafeMutablePointer<UInt8>!, _ c: UnsafeMutablePointer<CC_SHA256_CTX>!) -> Int32 {
    digestFinal(md, c)
}

@discardableResult
public func CC_SHA256(_ data: UnsafeRawPointer!, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>!) -> UnsafeMutablePointer<UInt8>! {
    digest(.sha256, data, len, md)
}

// SHA-384 (a CC_SHA512_CTX)

@discardableResult
public func CC_SHA384_Init(_ c: UnsafeMutablePointer<CC_SHA512_CTX>!) -> Int32 { digestInit(c, .sha384) }

@discardableResult
public func CC_SHA384_Update(_ c: UnsafeMutablePointer<CC_SHA512_CTX>!, _ data: UnsafeRawPointer!, _ len: CC_LONG) -> Int32 {
    digestUpdate(c, data, len)
}

@discardableResult
public func CC_SHA384_Final(_ md: UnsafeMutablePointer<UInt8>!, _ c: UnsafeMutablePointer<CC_SHA512_CTX>!) -> Int32 {
    digestFinal(md, c)
}

@discardableResult
public func CC_SHA384(_ data: UnsafeRawPointer!, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>!) -> UnsafeMutablePointer<UInt8>! {
    digest(.sha384, data, len, md)
}

// SHA-512

@discardableResult
public func CC_SHA512_Init(_ c: UnsafeMutablePointer<CC_SHA512_CTX>!) -> Int32 { digestInit(c, .sha512) }

@discardableResult
public func CC_SHA512_Update(_ c: UnsafeMutablePointer<CC_SHA512_CTX>!, _ data: UnsafeRawPointer!, _ len: CC_LONG) -> Int32 {
    digestUpdate(c, data, len)
}

@discardableResult
public func CC_SHA512_Final(_ md: UnsafeMutablePointer<UInt8>!, _ c: UnsafeMutablePointer<CC_SHA512_CTX>!) -> Int32 {
    digestFinal(md, c)
}

@discardableResult
public func CC_SHA512(_ data: UnsafeRawPointer!, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>!) -> UnsafeMutablePointer<UInt8>! {
    digest(.sha512, data, len, md)
}
