import COpenSSL

/// The few rules for calling libcrypto: results of 1 are success, anything else fails; the
/// library's error queue is cleared after a failure so the next call does not see a stale reason.
enum LibCrypto {
    /// Sets up libcrypto's secure heap once, before the first key exists: OpenSSL keeps private
    /// scalars and RSA factors in `BN_secure_new` numbers, which then live in locked pages with
    /// guard pages and are cleared when freed, as our own secrets are in libsodium's memory.
    /// 4 MiB holds thousands of keys; when mlock is refused the heap still works, unlocked.
    static let ready: Bool = {
        if CRYPTO_secure_malloc_initialized() == 0 { _ = CRYPTO_secure_malloc_init(4 << 20, 16) }
        return true
    }()

    static func check(_ result: Int32, _ error: KeyError = .library) throws {
        guard result == 1 else {
            ERR_clear_error()
            throw error
        }
    }

    static func notNil<T>(_ value: T?, _ error: KeyError = .library) throws -> T {
        guard let value else {
            ERR_clear_error()
            throw error
        }
        return value
    }

    /// An `EVP_PKEY_CTX` for one operation on `pkey`, freed after `body`.
    static func withContext<R>(_ pkey: OpaquePointer, _ body: (OpaquePointer) throws -> R) throws -> R {
        let ctx = try notNil(EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil))
        defer { EVP_PKEY_CTX_free(ctx) }
        return try body(ctx)
    }

    /// An `EVP_PKEY_CTX` for an algorithm by name ("EC", "RSA"), freed after `body`.
    static func withContext<R>(named name: String, _ body: (OpaquePointer) throws -> R) throws -> R {
        let ctx = try notNil(EVP_PKEY_CTX_new_from_name(nil, name, nil))
        defer { EVP_PKEY_CTX_free(ctx) }
        return try body(ctx)
    }

    /// An `EVP_MD_CTX` for one `EVP_DigestSign` or `EVP_DigestVerify`, freed after `body`.
    static func withDigestContext<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        let ctx = try notNil(EVP_MD_CTX_new())
        defer { EVP_MD_CTX_free(ctx) }
        return try body(ctx)
    }
}
