import COpenSSL

/// AES key wrap without padding (RFC 3394) through libcrypto's `AES-*-WRAP` ciphers: the key to
/// wrap is read where the caller keeps it, the unwrapped key written straight to the caller's
/// buffer (and cleared there by libcrypto when the integrity check fails).
public enum AESKeyWrap {
    /// Why a wrap or unwrap failed.
    public enum Failure: Error, Equatable, Sendable {
        /// A KEK that is not 16, 24 or 32 bytes, or a key or wrapped key of the wrong length.
        case parameter
        /// The unwrapped integrity value is not the IV: wrong KEK, IV or wrapped bytes.
        case integrity
        /// libcrypto refused.
        case library
    }

    /// Wraps `count` bytes (a multiple of 8, at least 16) under `kek` into `out` (`count + 8`
    /// bytes). A nil `iv` is RFC 3394's A6A6A6A6A6A6A6A6; otherwise its first 8 bytes.
    public static func wrap(kek: UnsafeRawPointer?, kekCount: Int, iv: UnsafeRawPointer?, _ key: UnsafeRawPointer?,
                            count: Int, into out: UnsafeMutableRawPointer) throws(Failure) -> Int {
        guard count >= 16, count % 8 == 0 else { throw .parameter }
        return try run(encrypting: true, kek: kek, kekCount: kekCount, iv: iv, key, count: count, into: out)
    }

    /// Unwraps `count` bytes (a multiple of 8, at least 24) into `out` (`count - 8` bytes).
    public static func unwrap(kek: UnsafeRawPointer?, kekCount: Int, iv: UnsafeRawPointer?, _ wrapped: UnsafeRawPointer?,
                              count: Int, into out: UnsafeMutableRawPointer) throws(Failure) -> Int {
        guard count >= 24, count % 8 == 0 else { throw .parameter }
        return try run(encrypting: false, kek: kek, kekCount: kekCount, iv: iv, wrapped, count: count, into: out)
    }

    private static func run(encrypting: Bool, kek: UnsafeRawPointer?, kekCount: Int, iv: UnsafeRawPointer?,
                            _ input: UnsafeRawPointer?, count: Int, into out: UnsafeMutableRawPointer) throws(Failure) -> Int {
        let index: Int
        switch kekCount {
        case 16: index = 0
        case 24: index = 1
        case 32: index = 2
        default: throw .parameter
        }
        guard let kek, let input, count <= 1 << 30 else { throw .parameter }
        guard let cipher = FetchedCiphers.wrap[index], let ctx = EVP_CIPHER_CTX_new() else { throw .library }
        defer { EVP_CIPHER_CTX_free(ctx) }
        // Required by the legacy EVP_aes_*_wrap; harmless for the provider's.
        EVP_CIPHER_CTX_set_flags(ctx, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW)
        guard EVP_CipherInit_ex2(ctx, cipher, kek.assumingMemoryBound(to: UInt8.self), iv?.assumingMemoryBound(to: UInt8.self),
                                 encrypting ? 1 : 0, nil) == 1 else {
            ERR_clear_error()
            throw .library
        }
        var written: Int32 = 0
        guard EVP_CipherUpdate(ctx, out.assumingMemoryBound(to: UInt8.self), &written,
                               input.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1, written > 0 else {
            ERR_clear_error()
            throw encrypting ? .library : .integrity
        }
        return Int(written)
    }
}
