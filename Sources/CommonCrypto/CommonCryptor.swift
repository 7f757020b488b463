import KeychainKeys

// CommonCrypto/CommonCryptor.h for AES over KeychainKeys' `AESCipher` (`EVP_CIPHER_CTX`): ECB
// and CBC with or without PKCS#7 padding, CFB, CFB8, CTR and OFB. Data goes straight between
// the caller's buffers and libcrypto, one `EVP_CipherUpdate` per update. The other algorithms
// Apple names are kCCUnimplemented.

/// A cryptor made by `CCCryptorCreate*`, released with `CCCryptorRelease`.
public typealias CCCryptorRef = OpaquePointer

public typealias CCOperation = UInt32
public let kCCEncrypt: Int = 0
public let kCCDecrypt: Int = 1

public typealias CCAlgorithm = UInt32
public let kCCAlgorithmAES128: Int = 0
public let kCCAlgorithmAES: Int = 0
public let kCCAlgorithmDES: Int = 1
public let kCCAlgorithm3DES: Int = 2
public let kCCAlgorithmCAST: Int = 3
public let kCCAlgorithmRC4: Int = 4
public let kCCAlgorithmRC2: Int = 5
public let kCCAlgorithmBlowfish: Int = 6

public typealias CCOptions = UInt32
public let kCCOptionPKCS7Padding: Int = 0x0001
public let kCCOptionECBMode: Int = 0x0002

public let kCCKeySizeAES128: Int = 16
public let kCCKeySizeAES192: Int = 24
public let kCCKeySizeAES256: Int = 32
public let kCCKeySizeDES: Int = 8
public let kCCKeySize3DES: Int = 24
public let kCCKeySizeMinCAST: Int = 5
public let kCCKeySizeMaxCAST: Int = 16
public let kCCKeySizeMinRC4: Int = 1
public let kCCKeySizeMaxRC4: Int = 512
public let kCCKeySizeMinRC2: Int = 1
public let kCCKeySizeMaxRC2: Int = 128
public let kCCKeySizeMinBlowfish: Int = 8
public let kCCKeySizeMaxBlowfish: Int = 56

public let kCCBlockSizeAES128: Int = 16
public let kCCBlockSizeDES: Int = 8
public let kCCBlockSize3DES: Int = 8
public let kCCBlockSizeCAST: Int = 8
public let kCCBlockSizeRC2: Int = 8
public let kCCBlockSizeBlowfish: Int = 8

public let kCCContextSizeDES: Int = 128
public let kCCContextSizeTripleDES: Int = 128
public let kCCContextSizeCAST: Int = 240
public let kCCContextSizeRC4: Int = 1072

public typealias CCMode = UInt32
public let kCCModeECB: Int = 1
public let kCCModeCBC: Int = 2
public let kCCModeCFB: Int = 3
public let kCCModeCTR: Int = 4
public let kCCModeF8: Int = 5
public let kCCModeLRW: Int = 6
public let kCCModeOFB: Int = 7
public let kCCModeXTS: Int = 8
public let kCCModeRC4: Int = 9
public let kCCModeCFB8: Int = 10

public typealias CCPadding = UInt32
public let ccNoPadding: Int = 0
public let ccPKCS7Padding: Int = 1

public typealias CCModeOptions = UInt32
public let kCCModeOptionCTR_LE: Int = 0x0001
public let kCCModeOptionCTR_BE: Int = 0x0002

// MARK: Parameters to AESCipher's terms

/// kCCSuccess when `op` and `alg` name an AES operation; kCCUnimplemented for Apple's other
/// algorithms, kCCParamError for unknown values.
private func checkOperation(_ op: CCOperation, _ alg: CCAlgorithm) -> Int {
    guard op == CCOperation(kCCEncrypt) || op == CCOperation(kCCDecrypt) else { return kCCParamError }
    switch Int(alg) {
    case kCCAlgorithmAES: return kCCSuccess
    case kCCAlgorithmDES...kCCAlgorithmBlowfish: return kCCUnimplemented
    default: return kCCParamError
    }
}

/// The AES mode of a `CCMode`, or the status for one that is not offered.
private func aesMode(_ mode: CCMode) -> Result<AESMode, CCStatusError> {
    switch Int(mode) {
    case kCCModeECB: return .success(.ecb)
    case kCCModeCBC: return .success(.cbc)
    case kCCModeCFB: return .success(.cfb)
    case kCCModeCFB8: return .success(.cfb8)
    case kCCModeCTR: return .success(.ctr)
    case kCCModeOFB: return .success(.ofb)
    case kCCModeF8, kCCModeLRW, kCCModeXTS, kCCModeRC4: return .failure(CCStatusError(kCCUnimplemented))
    default: return .failure(CCStatusError(kCCParamError))
    }
}

/// A status carried as an error inside this module.
struct CCStatusError: Error {
    let value: Int
    init(_ value: Int) { self.value = value }
}

/// The CommonCrypto status for an AES failure. `created` tells whether the cryptor existed (a
/// libcrypto failure before that is an allocation failure).
private func status(of failure: AESFailure, created: Bool = true) -> Int {
    switch failure {
    case .keySize: return kCCParamError
    case .alignment: return kCCAlignmentError
    case .decode: return kCCDecodeError
    case .library: return created ? kCCUnspecifiedError : kCCMemoryFailure
    }
}

@inline(__always)
private func cipher(_ ref: CCCryptorRef?) -> AESCipher? {
    guard let ref else { return nil }
    return Unmanaged<AESCipher>.fromOpaque(UnsafeRawPointer(ref)).takeUnretainedValue()
}

// MARK: Cryptors

/// Creates an ECB (`kCCOptionECBMode`) or CBC cryptor, with PKCS#7 padding when
/// `kCCOptionPKCS7Padding` is set. A nil `iv` is all zeros.
/// - Returns: kCCParamError for a key that is not 16, 24 or 32 bytes or a nil `cryptorRef`,
///   kCCUnimplemented for algorithms other than AES.
@discardableResult
public func CCCryptorCreate(_ op: CCOperation, _ alg: CCAlgorithm, _ options: CCOptions,
                            _ key: UnsafeRawPointer!, _ keyLength: Int, _ iv: UnsafeRawPointer!,
                            _ cryptorRef: UnsafeMutablePointer<CCCryptorRef?>!) -> CCCryptorStatus {
    let mode = options & CCOptions(kCCOptionECBMode) != 0 ? kCCModeECB : kCCModeCBC
    let padding = options & CCOptions(kCCOptionPKCS7Padding) != 0 ? ccPKCS7Padding : ccNoPadding
    return CCCryptorCreateWithMode(op, CCMode(mode), alg, CCPadding(padding), iv, key, keyLength, nil, 0, 0, 0, cryptorRef)
}

/// Creates a cryptor for `mode` (ECB, CBC, CFB, CFB8, CTR, OFB). `padding` is ccPKCS7Padding or
/// ccNoPadding and applies to ECB and CBC; CTR counts big-endian over the whole 16-byte block
/// (`options` 0 or kCCModeOptionCTR_BE). `tweak` and `numRounds` are not used by these modes.
/// - Returns: kCCParamError for a bad key length, operation or pointer; kCCUnimplemented for
///   XTS, F8, LRW, RC4, little-endian CTR and algorithms other than AES.
@discardableResult
public func CCCryptorCreateWithMode(_ op: CCOperation, _ mode: CCMode, _ alg: CCAlgorithm, _ padding: CCPadding,
                                    _ iv: UnsafeRawPointer!, _ key: UnsafeRawPointer!, _ keyLength: Int,
                                    _ tweak: UnsafeRawPointer!, _ tweakLength: Int, _ numRounds: Int32,
                                    _ options: CCModeOptions,
                                    _ cryptorRef: UnsafeMutablePointer<CCCryptorRef?>!) -> CCCryptorStatus {
    guard let cryptorRef else { return status(kCCParamError) }
    cryptorRef.pointee = nil
    let checked = checkOperation(op, alg)
    guard checked == kCCSuccess else { return status(checked) }
    let aes: AESMode
    switch aesMode(mode) {
    case .success(let m): aes = m
    case .failure(let e): return status(e.value)
    }
    if aes == .ctr && options & CCModeOptions(kCCModeOptionCTR_LE) != 0 { return status(kCCUnimplemented) }
    do {
        let made = try AESCipher(mode: aes, encrypting: op == CCOperation(kCCEncrypt),
                                 padding: padding == CCPadding(ccPKCS7Padding), key: key, keyCount: keyLength, iv: iv)
        cryptorRef.pointee = OpaquePointer(Unmanaged.passRetained(made).toOpaque())
        return status(kCCSuccess)
    } catch {
        return status(status(of: error, created: false))
    }
}

/// Frees the cryptor; libcrypto clears its key schedule. A nil cryptor is kCCSuccess.
@discardableResult
public func CCCryptorRelease(_ cryptorRef: CCCryptorRef!) -> CCCryptorStatus {
    guard let cryptorRef else { return status(kCCSuccess) }
    Unmanaged<AESCipher>.fromOpaque(UnsafeRawPointer(cryptorRef)).release()
    return status(kCCSuccess)
}

/// Encrypts or decrypts `dataInLength` bytes into `dataOut`, holding back a partial block (and,
/// when decrypting with padding, the last whole block) for the next call or `CCCryptorFinal`.
/// - Returns: kCCBufferTooSmall when `dataOutAvailable` is less than this call writes, with that
///   length in `dataOutMoved`; kCCParamError for a nil cryptor.
@discardableResult
public func CCCryptorUpdate(_ cryptorRef: CCCryptorRef!, _ dataIn: UnsafeRawPointer!, _ dataInLength: Int,
                            _ dataOut: UnsafeMutableRawPointer!, _ dataOutAvailable: Int,
                            _ dataOutMoved: UnsafeMutablePointer<Int>!) -> CCCryptorStatus {
    dataOutMoved?.pointee = 0
    guard let cryptor = cipher(cryptorRef), dataInLength >= 0 else { return status(kCCParamError) }
    if dataInLength == 0 { return status(kCCSuccess) }
    let needed = cryptor.updateLength(dataInLength)
    if needed > dataOutAvailable {
        dataOutMoved?.pointee = needed
        return status(kCCBufferTooSmall)
    }
    do {
        let written = try cryptor.update(dataIn, count: dataInLength, into: dataOut)
        dataOutMoved?.pointee = written
        return status(kCCSuccess)
    } catch {
        return status(status(of: error))
    }
}

/// Ends the operation: the padded last block when encrypting, the last block without its padding
/// when decrypting; nothing for stream modes. Needs room for a whole block when padding.
/// - Returns: kCCAlignmentError when a mode without padding (or a padded decryption) ends inside
///   a block, kCCDecodeError for bad padding, kCCBufferTooSmall (the length in `dataOutMoved`).
@discardableResult
public func CCCryptorFinal(_ cryptorRef: CCCryptorRef!, _ dataOut: UnsafeMutableRawPointer!, _ dataOutAvailable: Int,
                           _ dataOutMoved: UnsafeMutablePointer<Int>!) -> CCCryptorStatus {
    dataOutMoved?.pointee = 0
    guard let cryptor = cipher(cryptorRef) else { return status(kCCParamError) }
    let needed = cryptor.finishLength
    if needed > dataOutAvailable {
        dataOutMoved?.pointee = needed
        return status(kCCBufferTooSmall)
    }
    do {
        let written = try cryptor.finish(into: dataOut)
        dataOutMoved?.pointee = written
        return status(kCCSuccess)
    } catch {
        return status(status(of: error))
    }
}

/// The output size of an update of `inputLength` bytes (`final`: then a final), as Apple
/// computes it: whole blocks of what is held plus the input, a padding block when encrypting with
/// padding, everything when decrypting to the end.
public func CCCryptorGetOutputLength(_ cryptorRef: CCCryptorRef!, _ inputLength: Int, _ final: Bool) -> Int {
    guard let cryptor = cipher(cryptorRef) else { return 0 }
    let total = cryptor.buffered + inputLength
    if cryptor.mode.isStream { return total }
    let whole = total / AESCipher.blockLength * AESCipher.blockLength
    if cryptor.encrypting { return whole + (final && cryptor.padding ? AESCipher.blockLength : 0) }
    return final ? total : whole
}

/// Starts over with a new IV (nil: all zeros), keeping the key; held input is dropped.
@discardableResult
public func CCCryptorReset(_ cryptorRef: CCCryptorRef!, _ iv: UnsafeRawPointer!) -> CCCryptorStatus {
    guard let cryptor = cipher(cryptorRef) else { return status(kCCParamError) }
    return status(cryptor.reset(iv: iv) ? kCCSuccess : kCCUnspecifiedError)
}

/// One-shot ECB or CBC: a cryptor made, used and freed in this call, the data passed straight to
/// libcrypto. `dataOutMoved` gets the bytes written.
/// - Returns: kCCBufferTooSmall with the needed length in `dataOutMoved` (input rounded down to
///   whole blocks, plus a block when encrypting with padding; the input length when decrypting);
///   kCCParamError for a bad key length; kCCAlignmentError for input that is not whole blocks
///   without padding (or when decrypting); kCCDecodeError for bad padding.
@discardableResult
public func CCCrypt(_ op: CCOperation, _ alg: CCAlgorithm, _ options: CCOptions,
                    _ key: UnsafeRawPointer!, _ keyLength: Int, _ iv: UnsafeRawPointer!,
                    _ dataIn: UnsafeRawPointer!, _ dataInLength: Int,
                    _ dataOut: UnsafeMutableRawPointer!, _ dataOutAvailable: Int,
                    _ dataOutMoved: UnsafeMutablePointer<Int>!) -> CCCryptorStatus {
    let checked = checkOperation(op, alg)
    guard checked == kCCSuccess else { return status(checked) }
    guard key != nil, keyLength == kCCKeySizeAES128 || keyLength == kCCKeySizeAES192 || keyLength == kCCKeySizeAES256,
          dataInLength >= 0 else { return status(kCCParamError) }
    let mode: AESMode = options & CCOptions(kCCOptionECBMode) != 0 ? .ecb : .cbc
    let padding = options & CCOptions(kCCOptionPKCS7Padding) != 0
    let encrypting = op == CCOperation(kCCEncrypt)
    let needed = AESCipher.oneShotLength(mode: mode, encrypting: encrypting, padding: padding, count: dataInLength)
    if needed > dataOutAvailable {
        dataOutMoved?.pointee = needed
        return status(kCCBufferTooSmall)
    }
    do {
        let written = try AESCipher.crypt(mode: mode, encrypting: encrypting, padding: padding, key: key, keyCount: keyLength,
                                          iv: iv, input: dataIn, count: dataInLength, into: dataOut)
        dataOutMoved?.pointee = written
        return status(kCCSuccess)
    } catch {
        return status(status(of: error))
    }
}
