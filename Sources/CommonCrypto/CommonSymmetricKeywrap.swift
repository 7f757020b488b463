import KeychainKeys

// CommonCrypto/CommonSymmetricKeywrap.h: AES key wrap (RFC 3394) over KeychainKeys'
// `AESKeyWrap` (libcrypto's AES-*-WRAP ciphers).

public typealias CCWrappingAlgorithm = UInt32
public let kCCWRAPAES: Int = 1

/// RFC 3394's default initial value, A6A6A6A6A6A6A6A6.
nonisolated(unsafe) public let CCrfc3394_iv: UnsafePointer<UInt8>! = {
    let iv = UnsafeMutablePointer<UInt8>.allocate(capacity: 8)
    iv.initialize(repeating: 0xA6, count: 8)
    return UnsafePointer(iv)
}()
public let CCrfc3394_ivLen: Int = 8

/// The wrapped length of a `rawKeyLen`-byte key: 8 bytes more.
public func CCSymmetricWrappedSize(_ algorithm: CCWrappingAlgorithm, _ rawKeyLen: Int) -> Int { rawKeyLen + 8 }

/// The unwrapped length of a `wrappedKeyLen`-byte wrapped key: 8 bytes less (0 below 8).
public func CCSymmetricUnwrappedSize(_ algorithm: CCWrappingAlgorithm, _ wrappedKeyLen: Int) -> Int {
    max(wrappedKeyLen - 8, 0)
}

/// Wraps `rawKey` under `kek` into `wrappedKey`; `*wrappedKeyLen` is its room on entry and the
/// wrapped length (`rawKeyLen + 8`) on return. A nil `iv` is `CCrfc3394_iv`. As Apple's,
/// `algorithm` is not looked at (AES is the only one).
/// - Returns: kCCParamError for a KEK that is not 16, 24 or 32 bytes, too little room, an IV
///   shorter than 8 bytes, or a key that is not a multiple of 8 bytes of at least 16; the output
///   is cleared then.
@discardableResult
public func CCSymmetricKeyWrap(_ algorithm: CCWrappingAlgorithm, _ iv: UnsafePointer<UInt8>!, _ ivLen: Int,
                               _ kek: UnsafePointer<UInt8>!, _ kekLen: Int, _ rawKey: UnsafePointer<UInt8>!,
                               _ rawKeyLen: Int, _ wrappedKey: UnsafeMutablePointer<UInt8>!,
                               _ wrappedKeyLen: UnsafeMutablePointer<Int>!) -> Int32 {
    guard let wrappedKeyLen, let wrappedKey else { return status(kCCParamError) }
    let room = wrappedKeyLen.pointee
    guard room >= rawKeyLen + 8, iv == nil || ivLen >= 8 else {
        wrappedKey.update(repeating: 0, count: max(room, 0))
        return status(kCCParamError)
    }
    do {
        wrappedKeyLen.pointee = try AESKeyWrap.wrap(kek: kek, kekCount: kekLen, iv: iv, rawKey, count: rawKeyLen,
                                                    into: wrappedKey)
        return status(kCCSuccess)
    } catch {
        wrappedKey.update(repeating: 0, count: room)
        return status(kCCParamError)
    }
}

/// Unwraps `wrappedKey` into `rawKey`; `*rawKeyLen` is its room on entry and the key length
/// (`wrappedKeyLen - 8`) on return.
/// - Returns: kCCParamError for a bad KEK, too little room, a short IV, or a wrapped key that is
///   not a multiple of 8 bytes of at least 24; kCCDecodeError when the integrity check fails
///   (wrong KEK, IV or bytes), with the output cleared.
@discardableResult
public func CCSymmetricKeyUnwrap(_ algorithm: CCWrappingAlgorithm, _ iv: UnsafePointer<UInt8>!, _ ivLen: Int,
                                 _ kek: UnsafePointer<UInt8>!, _ kekLen: Int, _ wrappedKey: UnsafePointer<UInt8>!,
                                 _ wrappedKeyLen: Int, _ rawKey: UnsafeMutablePointer<UInt8>!,
                                 _ rawKeyLen: UnsafeMutablePointer<Int>!) -> Int32 {
    guard let rawKeyLen, let rawKey else { return status(kCCParamError) }
    let room = rawKeyLen.pointee
    guard room >= wrappedKeyLen - 8, iv == nil || ivLen >= 8 else { return status(kCCParamError) }
    do {
        rawKeyLen.pointee = try AESKeyWrap.unwrap(kek: kek, kekCount: kekLen, iv: iv, wrappedKey, count: wrappedKeyLen,
                                                  into: rawKey)
        return status(kCCSuccess)
    } catch {
        rawKey.update(repeating: 0, count: max(room, 0))
        return status(error == .integrity ? kCCDecodeError : kCCParamError)
    }
}
