import COpenSSL

/// PBKDF2 (RFC 8018 5.2) with HMAC over a `HashFunction`: libcrypto's `PKCS5_PBKDF2_HMAC`, which
/// reads the password and salt where the caller keeps them and writes the key straight to `out`.
public enum PasswordKDF {
    /// Derives `count` bytes into `out`.
    /// - Returns: false for a length or round count libcrypto's `int`s cannot take, or when
    ///   libcrypto fails.
    public static func pbkdf2(_ function: HashFunction, password: UnsafeRawPointer?, passwordCount: Int,
                              salt: UnsafeRawPointer?, saltCount: Int, rounds: UInt32,
                              into out: UnsafeMutableRawPointer, count: Int) -> Bool {
        let limit = Int(Int32.max)
        guard let md = function.md, rounds > 0, rounds <= UInt32(Int32.max), count > 0, count <= limit,
              passwordCount >= 0, passwordCount <= limit, saltCount >= 0, saltCount <= limit else { return false }
        let pass = passwordCount == 0 ? HashFunction.empty : password
        let saltBytes = saltCount == 0 ? HashFunction.empty : salt
        guard let pass, let saltBytes else { return false }
        let ok = PKCS5_PBKDF2_HMAC(pass.assumingMemoryBound(to: CChar.self), Int32(passwordCount),
                                   saltBytes.assumingMemoryBound(to: UInt8.self), Int32(saltCount), Int32(rounds), md,
                                   Int32(count), out.assumingMemoryBound(to: UInt8.self)) == 1
        if !ok { ERR_clear_error() }
        return ok
    }
}
