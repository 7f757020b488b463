import COpenSSL

/// libcrypto's CSPRNG (`RAND_bytes`: the default DRBG, seeded from getrandom(2)).
public enum SystemRandom {
    /// Fills `count` bytes at `buffer`, in steps libcrypto's `int` length can take.
    /// - Returns: false when the DRBG fails (it is not seeded); the bytes are then unspecified.
    public static func fill(_ buffer: UnsafeMutableRawPointer?, count: Int) -> Bool {
        guard count > 0 else { return count == 0 }
        guard let buffer else { return false }
        var done = 0
        while done < count {
            let n = min(count - done, 1 << 30)
            guard RAND_bytes((buffer + done).assumingMemoryBound(to: UInt8.self), Int32(n)) == 1 else {
                ERR_clear_error()
                return false
            }
            done += n
        }
        return true
    }
}
