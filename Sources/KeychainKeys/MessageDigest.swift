import COpenSSL

/// The hash functions CommonCrypto names: MD5 (for old formats only), SHA-1 and SHA-2.
///
/// Each is fetched once from libcrypto's default provider (`EVP_MD_fetch`), so that a hash costs
/// one `EVP_Digest` and no implicit fetch by name.
public enum HashFunction: Int, CaseIterable, Sendable {
    case md5, sha1, sha224, sha256, sha384, sha512

    /// Output length in bytes.
    public var length: Int {
        switch self {
        case .md5: return 16
        case .sha1: return 20
        case .sha224: return 28
        case .sha256: return 32
        case .sha384: return 48
        case .sha512: return 64
        }
    }

    /// Input block length in bytes (HMAC pads its key to it).
    public var blockLength: Int {
        switch self {
        case .md5, .sha1, .sha224, .sha256: return 64
        case .sha384, .sha512: return 128
        }
    }

    /// libcrypto's name, kept as a `StaticString` because `OSSL_PARAM` holds the pointer.
    var name: StaticString {
        switch self {
        case .md5: return "MD5"
        case .sha1: return "SHA1"
        case .sha224: return "SHA224"
        case .sha256: return "SHA256"
        case .sha384: return "SHA384"
        case .sha512: return "SHA512"
        }
    }

    /// The fetched `EVP_MD`, nil when the provider lacks it (never for the default provider).
    var md: OpaquePointer? { FetchedDigests.table[rawValue] }

    /// Writes the digest of `count` bytes at `data` to `out` (`length` bytes): one `EVP_Digest`.
    /// - Returns: false when libcrypto fails; `out` is then unspecified.
    public func hash(_ data: UnsafeRawPointer?, count: Int, into out: UnsafeMutableRawPointer) -> Bool {
        guard let md, count >= 0, data != nil || count == 0 else { return false }
        let ok = EVP_Digest(data ?? Self.empty, count, out.assumingMemoryBound(to: UInt8.self), nil, md, nil) == 1
        if !ok { ERR_clear_error() }
        return ok
    }

    /// A valid pointer for an empty input given as NULL (libcrypto reads none of it).
    static var empty: UnsafeRawPointer { UnsafeRawPointer(("" as StaticString).utf8Start) }
}

/// The `EVP_MD`s, fetched on first use and kept for the life of the process (never freed: they
/// are shared, reference-counted provider objects).
enum FetchedDigests {
    nonisolated(unsafe) static let table: [OpaquePointer?] = HashFunction.allCases.map { function in
        function.name.withUTF8Buffer { name in
            name.withMemoryRebound(to: CChar.self) { EVP_MD_fetch(nil, $0.baseAddress, nil) }
        }
    }
}

/// A running digest: an `EVP_MD_CTX`, freed (and cleared by the provider) when released.
///
/// Not thread-safe; `copy()` forks the state, as copying a C digest context does.
public final class DigestContext {
    private let ctx: OpaquePointer
    public let function: HashFunction

    /// A fresh context (`EVP_MD_CTX_new`, `EVP_DigestInit_ex2`); nil when libcrypto fails.
    public init?(_ function: HashFunction) {
        guard let md = function.md, let ctx = EVP_MD_CTX_new() else { return nil }
        guard EVP_DigestInit_ex2(ctx, md, nil) == 1 else {
            EVP_MD_CTX_free(ctx)
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

    deinit { EVP_MD_CTX_free(ctx) }

    /// An independent context in the same state (`EVP_MD_CTX_copy_ex`); nil when libcrypto fails.
    public func copy() -> DigestContext? {
        guard let other = EVP_MD_CTX_new() else { return nil }
        guard EVP_MD_CTX_copy_ex(other, ctx) == 1 else {
            EVP_MD_CTX_free(other)
            ERR_clear_error()
            return nil
        }
        return DigestContext(adopting: other, function)
    }

    /// Adds `count` bytes at `data` (`EVP_DigestUpdate`).
    public func update(_ data: UnsafeRawPointer?, count: Int) -> Bool {
        guard count > 0 else { return count == 0 }
        guard let data else { return false }
        return EVP_DigestUpdate(ctx, data, count) == 1
    }

    /// Writes the digest to `out` (`function.length` bytes, `EVP_DigestFinal_ex`). The context
    /// is spent after this; release it.
    public func finish(into out: UnsafeMutableRawPointer) -> Bool {
        let ok = EVP_DigestFinal_ex(ctx, out.assumingMemoryBound(to: UInt8.self), nil) == 1
        if !ok { ERR_clear_error() }
        return ok
    }
}
