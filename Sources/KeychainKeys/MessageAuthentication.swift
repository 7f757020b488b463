import COpenSSL

/// HMAC (RFC 2104) over the `HashFunction`s. The key is read where the caller keeps it and copied
/// only into libcrypto's context, which clears it when freed.
public enum MessageAuthentication {
    /// Writes HMAC(key, data) to `out` (`function.length` bytes): libcrypto's one-shot `HMAC`.
    /// - Returns: false when libcrypto fails or a length is out of range.
    public static func hmac(_ function: HashFunction, key: UnsafeRawPointer?, keyCount: Int,
                            data: UnsafeRawPointer?, count: Int, into out: UnsafeMutableRawPointer) -> Bool {
        guard let md = function.md, keyCount >= 0, keyCount <= Int(Int32.max), count >= 0 else { return false }
        let keyBytes = keyCount == 0 ? HashFunction.empty : key
        let dataBytes = count == 0 ? HashFunction.empty : data
        guard let keyBytes, let dataBytes else { return false }
        let result = HMAC(md, keyBytes, Int32(keyCount), dataBytes.assumingMemoryBound(to: UInt8.self), count,
                          out.assumingMemoryBound(to: UInt8.self), nil)
        if result == nil { ERR_clear_error() }
        return result != nil
    }
}

/// A running HMAC: an `EVP_MAC_CTX` of libcrypto's "HMAC", freed and cleared when released.
///
/// Not thread-safe; `copy()` forks the state.
public final class HMACContext {
    private let ctx: OpaquePointer
    public let function: HashFunction

    /// Keys a fresh context (`EVP_MAC_CTX_new`, `EVP_MAC_init` with the digest's name); nil when
    /// libcrypto fails.
    public init?(_ function: HashFunction, key: UnsafeRawPointer?, keyCount: Int) {
        guard let mac = FetchedMAC.hmac, keyCount >= 0, let ctx = EVP_MAC_CTX_new(mac) else { return nil }
        let keyBytes = keyCount == 0 ? HashFunction.empty : key
        let ok: Bool = function.name.withUTF8Buffer { name in
            guard let keyBytes else { return false }
            let digest = UnsafeMutableRawPointer(mutating: name.baseAddress!).assumingMemoryBound(to: CChar.self)
            var params = [OSSL_PARAM_construct_utf8_string(kc_mac_param_digest, digest, 0), OSSL_PARAM_construct_end()]
            return EVP_MAC_init(ctx, keyBytes.assumingMemoryBound(to: UInt8.self), keyCount, &params) == 1
        }
        guard ok else {
            EVP_MAC_CTX_free(ctx)
            ERR_clear_error()
            return nil
        }
        self.ctx = ctx
        self.function = function
    }

    private init(adopting ctx: OpaquePointer, _ function: HashFunction) {
        self.ctx = ctx
        self.function = function
    }

    deinit { EVP_MAC_CTX_free(ctx) }

    /// An independent context in the same state (`EVP_MAC_CTX_dup`); nil when libcrypto fails.
    public func copy() -> HMACContext? {
        guard let other = EVP_MAC_CTX_dup(ctx) else {
            ERR_clear_error()
            return nil
        }
        return HMACContext(adopting: other, function)
    }

    /// Adds `count` bytes at `data` (`EVP_MAC_update`).
    public func update(_ data: UnsafeRawPointer?, count: Int) -> Bool {
        guard count > 0 else { return count == 0 }
        guard let data else { return false }
        return EVP_MAC_update(ctx, data.assumingMemoryBound(to: UInt8.self), count) == 1
    }

    /// Writes the MAC to `out` (`function.length` bytes, `EVP_MAC_final`). The context is spent
    /// after this; release it.
    public func finish(into out: UnsafeMutableRawPointer) -> Bool {
        var written = 0
        let ok = EVP_MAC_final(ctx, out.assumingMemoryBound(to: UInt8.self), &written, function.length) == 1
        if !ok { ERR_clear_error() }
        return ok && written == function.length
    }
}

/// libcrypto's HMAC implementation, fetched once.
enum FetchedMAC {
    nonisolated(unsafe) static let hmac: OpaquePointer? = EVP_MAC_fetch(nil, "HMAC", nil)
}
