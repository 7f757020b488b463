import COpenSSL
import KeychainCrypto

/// The SHA-1 and SHA-2 digests Apple's key algorithms name.
public enum DigestAlgorithm: String, CaseIterable, Sendable {
    case sha1 = "SHA1", sha224 = "SHA224", sha256 = "SHA256", sha384 = "SHA384", sha512 = "SHA512"

    var md: OpaquePointer {
        switch self {
        case .sha1: return EVP_sha1()
        case .sha224: return EVP_sha224()
        case .sha256: return EVP_sha256()
        case .sha384: return EVP_sha384()
        case .sha512: return EVP_sha512()
        }
    }

    /// Output length in bytes.
    public var length: Int {
        switch self {
        case .sha1: return 20
        case .sha224: return 28
        case .sha256: return 32
        case .sha384: return 48
        case .sha512: return 64
        }
    }

    /// The digest of `data` (`EVP_Digest`).
    public func hash(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        var written: UInt32 = 0
        let ok = out.withUnsafeMutableBufferPointer {
            EVP_Digest(data.baseAddress, data.count, $0.baseAddress, &written, md, nil)
        }
        precondition(ok == 1 && Int(written) == length, "EVP_Digest failed")
        return out
    }

    public func hash(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { hash($0) } }
}

/// ANSI X9.63 key derivation (SEC 1 3.6.1), libcrypto's `X963KDF`: `count` bytes of
/// hash(Z || counter || sharedInfo) blocks, counter from 1, big-endian.
/// - Throws: `invalidInput` for a zero count, `library` when libcrypto refuses.
public func x963KDF(_ hash: DigestAlgorithm, secret: SecureBytes, sharedInfo: [UInt8], count: Int) throws -> SecureBytes {
    guard count > 0 else { throw KeyError.invalidInput }
    _ = LibCrypto.ready
    let kdf = try LibCrypto.notNil(EVP_KDF_fetch(nil, "X963KDF", nil))
    defer { EVP_KDF_free(kdf) }
    let ctx = try LibCrypto.notNil(EVP_KDF_CTX_new(kdf))
    defer { EVP_KDF_CTX_free(ctx) }
    let out = try SecureBytes(count: count)
    var digestName = Array(hash.rawValue.utf8CString)
    var info = sharedInfo
    let result: Int32 = digestName.withUnsafeMutableBufferPointer { name in
        secret.withUnsafeBytes { z in
            info.withUnsafeMutableBytes { infoBytes in
                var params = [
                    OSSL_PARAM_construct_utf8_string(kc_param_digest, name.baseAddress, 0),
                    OSSL_PARAM_construct_octet_string(kc_param_key, UnsafeMutableRawPointer(mutating: z.baseAddress), z.count),
                    OSSL_PARAM_construct_octet_string(kc_param_info, infoBytes.baseAddress, infoBytes.count),
                    OSSL_PARAM_construct_end(),
                ]
                if infoBytes.count == 0 { params.remove(at: 2) }
                return out.withUnsafeMutableBytes { EVP_KDF_derive(ctx, $0.baseAddress, count, &params) }
            }
        }
    }
    try LibCrypto.check(result)
    return out
}
