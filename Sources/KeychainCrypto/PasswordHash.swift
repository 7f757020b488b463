import CSodium

/// Argon2id cost parameters, as stored in the vault header.
public struct KDFParameters: Equatable, Sendable {
    /// Number of passes (`opslimit`).
    public var opsLimit: UInt64
    /// Memory in bytes (`memlimit`).
    public var memLimit: UInt64

    public init(opsLimit: UInt64, memLimit: UInt64) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// libsodium's INTERACTIVE preset: 2 passes, 64 MiB.
    public static let interactive = KDFParameters(
        opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE),
        memLimit: UInt64(crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE))
    /// libsodium's MODERATE preset: 3 passes, 256 MiB. The default.
    public static let moderate = KDFParameters(
        opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_MODERATE),
        memLimit: UInt64(crypto_pwhash_argon2id_MEMLIMIT_MODERATE))
    /// libsodium's SENSITIVE preset: 4 passes, 1 GiB.
    public static let sensitive = KDFParameters(
        opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_SENSITIVE),
        memLimit: UInt64(crypto_pwhash_argon2id_MEMLIMIT_SENSITIVE))
    /// The smallest cost libsodium accepts; for tests and fixtures, never for real vaults.
    public static let minimum = KDFParameters(
        opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_MIN),
        memLimit: UInt64(crypto_pwhash_argon2id_MEMLIMIT_MIN))

    /// A preset by name: `interactive`, `moderate`, `sensitive`.
    public init?(presetName: String) {
        switch presetName {
        case "interactive": self = .interactive
        case "moderate": self = .moderate
        case "sensitive": self = .sensitive
        default: return nil
        }
    }

    /// True when libsodium accepts these limits for Argon2id and they stay within what
    /// keychainfs allows (at most 16 passes and 4 GiB), so a damaged header cannot demand hours.
    public var isValid: Bool {
        opsLimit >= UInt64(crypto_pwhash_argon2id_OPSLIMIT_MIN)
            && opsLimit <= 16
            && memLimit >= UInt64(crypto_pwhash_argon2id_MEMLIMIT_MIN)
            && memLimit <= UInt64(4) << 30
    }
}

/// Argon2id key derivation (`crypto_pwhash` with `crypto_pwhash_ALG_ARGON2ID13`).
public enum PasswordHash {
    public static let saltLength = Int(crypto_pwhash_argon2id_SALTBYTES) // 16

    /// Derives a key of `length` bytes into guarded memory.
    /// - Throws: `CryptoError.keyDerivationFailed` when libsodium refuses (limits, memory),
    ///   `CryptoError.allocationFailed` when no guarded memory is left for the key.
    public static func deriveKey(length: Int = 32, passphrase: SecureBytes, salt: [UInt8],
                                 parameters: KDFParameters) throws -> SecureBytes {
        Sodium.ensure()
        guard salt.count == saltLength, parameters.isValid else { throw CryptoError.keyDerivationFailed }
        let key = try SecureBytes(count: length)
        let rc = key.withUnsafeMutableBytes { k in
            passphrase.withUnsafeBytes { p in
                salt.withUnsafeBufferPointer { s in
                    crypto_pwhash(k.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(length),
                                  p.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(p.count),
                                  s.baseAddress!, parameters.opsLimit, Int(parameters.memLimit),
                                  crypto_pwhash_ALG_ARGON2ID13)
                }
            }
        }
        guard rc == 0 else { throw CryptoError.keyDerivationFailed }
        return key
    }
}
