import COpenSSL

/// The AES modes CommonCrypto offers: ECB and CBC (block modes, PKCS#7 padding optional) and
/// CFB, CFB8, CTR (128-bit big-endian counter) and OFB (stream modes, no padding).
public enum AESMode: Int, CaseIterable, Sendable {
    case ecb, cbc, cfb, cfb8, ctr, ofb

    /// Whether output follows input byte for byte (no blocks held back, nothing to pad).
    public var isStream: Bool { self != .ecb && self != .cbc }

    var suffix: String {
        switch self {
        case .ecb: return "ECB"
        case .cbc: return "CBC"
        case .cfb: return "CFB"
        case .cfb8: return "CFB8"
        case .ctr: return "CTR"
        case .ofb: return "OFB"
        }
    }
}

/// Why an AES operation failed.
public enum AESFailure: Error, Equatable, Sendable {
    /// The key is not 16, 24 or 32 bytes.
    case keySize
    /// A block mode without padding, or a padded decryption, ended inside a block.
    case alignment
    /// A padded decryption whose last block does not end in valid PKCS#7 padding.
    case decode
    /// libcrypto refused (out of memory, or a length it cannot take).
    case library
}

/// AES through libcrypto's `EVP_CIPHER_CTX`. Input and output go straight between the caller's
/// buffers and libcrypto; the key is read from where the caller keeps it and lives on only in the
/// context's key schedule, which the provider clears when the context is freed (`deinit`).
///
/// Output sizes are exact: `updateLength` and `finishLength` say how many bytes the next call
/// writes, and the caller must have that much room. Not thread-safe.
public final class AESCipher {
    public static let blockLength = 16

    private let ctx: OpaquePointer
    public let mode: AESMode
    public let encrypting: Bool
    /// PKCS#7 padding; meaningful for ECB and CBC only.
    public let padding: Bool
    /// Input bytes libcrypto holds: a partial block, or when decrypting with padding the last
    /// whole block, kept until `finish` can remove the padding.
    public private(set) var buffered = 0

    /// A keyed context (`EVP_CIPHER_CTX_new`, `EVP_CipherInit_ex2`). A nil `iv` is all zeros;
    /// ECB ignores it.
    /// - Throws: `keySize` for a key that is not 16, 24 or 32 bytes, `library` when libcrypto fails.
    public init(mode: AESMode, encrypting: Bool, padding: Bool, key: UnsafeRawPointer?, keyCount: Int,
                iv: UnsafeRawPointer?) throws(AESFailure) {
        let cipher = try Self.cipher(mode, keyCount: keyCount, key: key)
        guard let ctx = EVP_CIPHER_CTX_new() else { throw .library }
        guard Self.initialize(ctx, cipher, mode: mode, encrypting: encrypting, padding: padding, key: key, iv: iv) else {
            EVP_CIPHER_CTX_free(ctx)
            throw .library
        }
        self.ctx = ctx
        self.mode = mode
        self.encrypting = encrypting
        self.padding = padding && !mode.isStream
    }

    deinit { EVP_CIPHER_CTX_free(ctx) }

    /// Bytes the next `update` of `count` input bytes writes.
    public func updateLength(_ count: Int) -> Int {
        Self.updateLength(mode: mode, encrypting: encrypting, padding: padding, buffered: buffered, count: count)
    }

    /// The most bytes `finish` writes now.
    public var finishLength: Int {
        if mode.isStream || !padding { return 0 }
        return encrypting ? Self.blockLength : buffered
    }

    /// Processes `count` bytes at `input` into `output`, which holds `updateLength(count)` bytes
    /// (`EVP_CipherUpdate`; inputs over 1 GiB in 1 GiB steps). Returns the bytes written.
    /// - Throws: `library` when libcrypto fails.
    public func update(_ input: UnsafeRawPointer?, count: Int, into output: UnsafeMutableRawPointer?) throws(AESFailure) -> Int {
        let expected = updateLength(count)
        let written = try Self.process(ctx, input, count: count, into: output)
        guard written == expected else { throw .library }
        buffered += count - written
        return written
    }

    /// Ends the operation into `output`, which holds `finishLength` bytes (`EVP_CipherFinal_ex`):
    /// the padded last block, or the last plaintext block without its padding. Returns the bytes
    /// written.
    /// - Throws: `alignment` when a block mode without padding holds a partial block, or a padded
    ///   decryption does not end on a block; `decode` for bad padding (or no block at all).
    public func finish(into output: UnsafeMutableRawPointer?) throws(AESFailure) -> Int {
        if mode.isStream { return 0 }
        if !padding || !encrypting {
            if buffered % Self.blockLength != 0 { throw .alignment }
            if !encrypting && padding && buffered == 0 { throw .decode }
        }
        if !padding { return 0 }
        let written = try Self.finalize(ctx, into: output, encrypting: encrypting)
        buffered = 0
        return written
    }

    /// Starts over with a new IV (nil: all zeros) and the same key, dropping buffered input
    /// (`EVP_CipherInit_ex2` without a cipher or key).
    public func reset(iv: UnsafeRawPointer?) -> Bool {
        buffered = 0
        return Self.initialize(ctx, nil, mode: mode, encrypting: encrypting, padding: padding, key: nil, iv: iv)
    }

    /// Encrypts or decrypts `count` bytes at `input` into `output` in one call: a context made,
    /// used and freed here. `output` holds `oneShotLength(...)` bytes. Returns the bytes written.
    /// - Throws: as `init`, `update` and `finish`.
    public static func crypt(mode: AESMode, encrypting: Bool, padding: Bool, key: UnsafeRawPointer?, keyCount: Int,
                             iv: UnsafeRawPointer?, input: UnsafeRawPointer?, count: Int,
                             into output: UnsafeMutableRawPointer?) throws(AESFailure) -> Int {
        let cipher = try Self.cipher(mode, keyCount: keyCount, key: key)
        let padded = padding && !mode.isStream
        if !mode.isStream && (!padded || !encrypting) {
            if count % blockLength != 0 { throw .alignment }
            if !encrypting && padded && count == 0 { throw .decode }
        }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw .library }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard initialize(ctx, cipher, mode: mode, encrypting: encrypting, padding: padded, key: key, iv: iv) else { throw .library }
        let written = try process(ctx, input, count: count, into: output)
        guard padded else { return written }
        return try written + finalize(ctx, into: output.map { $0 + written }, encrypting: encrypting)
    }

    /// `EVP_CipherFinal_ex` into `output`, or into a scratch block that is cleared and dropped
    /// when the caller gave no buffer (as CommonCrypto allows).
    private static func finalize(_ ctx: OpaquePointer, into output: UnsafeMutableRawPointer?,
                                 encrypting: Bool) throws(AESFailure) -> Int {
        var written: Int32 = 0
        let ok: Bool
        if let output {
            ok = EVP_CipherFinal_ex(ctx, output.assumingMemoryBound(to: UInt8.self), &written) == 1
        } else {
            var scratch = (UInt64(0), UInt64(0))
            ok = withUnsafeMutableBytes(of: &scratch) { block in
                defer { block.initializeMemory(as: UInt8.self, repeating: 0) }
                return EVP_CipherFinal_ex(ctx, block.baseAddress!.assumingMemoryBound(to: UInt8.self), &written) == 1
            }
        }
        guard ok else {
            ERR_clear_error()
            throw encrypting ? .library : .decode
        }
        return Int(written)
    }

    /// The most bytes `crypt` writes for `count` input bytes.
    public static func oneShotLength(mode: AESMode, encrypting: Bool, padding: Bool, count: Int) -> Int {
        if mode.isStream || !encrypting { return count }
        return count / blockLength * blockLength + (padding ? blockLength : 0)
    }

    static func updateLength(mode: AESMode, encrypting: Bool, padding: Bool, buffered: Int, count: Int) -> Int {
        if mode.isStream { return count }
        let total = buffered + count
        if encrypting || !padding { return total / blockLength * blockLength }
        // A padded decryption keeps the last whole block back for `finish`.
        return total == 0 ? 0 : (total - 1) / blockLength * blockLength
    }

    private static func cipher(_ mode: AESMode, keyCount: Int, key: UnsafeRawPointer?) throws(AESFailure) -> OpaquePointer {
        let size: Int
        switch keyCount {
        case 16: size = 0
        case 24: size = 1
        case 32: size = 2
        default: throw .keySize
        }
        guard key != nil else { throw .keySize }
        guard let cipher = FetchedCiphers.aes[size * AESMode.allCases.count + mode.rawValue] else { throw .library }
        return cipher
    }

    private static func initialize(_ ctx: OpaquePointer, _ cipher: OpaquePointer?, mode: AESMode, encrypting: Bool,
                                   padding: Bool, key: UnsafeRawPointer?, iv: UnsafeRawPointer?) -> Bool {
        let start = mode == .ecb ? nil : (iv ?? FetchedCiphers.zeroBlock)
        let ok = EVP_CipherInit_ex2(ctx, cipher, key?.assumingMemoryBound(to: UInt8.self),
                                    start?.assumingMemoryBound(to: UInt8.self), encrypting ? 1 : 0, nil) == 1
            && EVP_CIPHER_CTX_set_padding(ctx, padding ? 1 : 0) == 1
        if !ok { ERR_clear_error() }
        return ok
    }

    /// `EVP_CipherUpdate` over `count` bytes, in steps libcrypto's `int` lengths can take.
    private static func process(_ ctx: OpaquePointer, _ input: UnsafeRawPointer?, count: Int,
                                into output: UnsafeMutableRawPointer?) throws(AESFailure) -> Int {
        guard count > 0 else { return 0 }
        guard let input, let output else { throw .library }
        let step = 1 << 30
        var done = 0, written = 0
        while done < count {
            let n = min(step, count - done)
            var moved: Int32 = 0
            guard EVP_CipherUpdate(ctx, (output + written).assumingMemoryBound(to: UInt8.self), &moved,
                                   (input + done).assumingMemoryBound(to: UInt8.self), Int32(n)) == 1 else {
                ERR_clear_error()
                throw .library
            }
            done += n
            written += Int(moved)
        }
        return written
    }
}

/// The AES `EVP_CIPHER`s, fetched on first use: modes by key size (16, 24, 32 bytes), then the
/// RFC 3394 key wraps.
enum FetchedCiphers {
    nonisolated(unsafe) static let aes: [OpaquePointer?] = [128, 192, 256].flatMap { bits in
        AESMode.allCases.map { EVP_CIPHER_fetch(nil, "AES-\(bits)-\($0.suffix)", nil) }
    }
    nonisolated(unsafe) static let wrap: [OpaquePointer?] = [128, 192, 256].map { EVP_CIPHER_fetch(nil, "AES-\($0)-WRAP", nil) }

    /// The all-zero IV that CommonCrypto uses when none is given.
    nonisolated(unsafe) static let zeroBlock: UnsafeRawPointer = {
        let block = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)
        block.initializeMemory(as: UInt8.self, repeating: 0, count: 16)
        return UnsafeRawPointer(block)
    }()
}
