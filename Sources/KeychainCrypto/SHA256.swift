import CSodium

/// SHA-256 (`crypto_hash_sha256`), for public values only: SSH key fingerprints.
public enum SHA256 {
    public static func hash(_ message: [UInt8]) -> [UInt8] {
        Sodium.ensure()
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        let rc = crypto_hash_sha256(&out, message, UInt64(message.count))
        precondition(rc == 0)
        return out
    }
}
