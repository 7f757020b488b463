import KeychainCore
import KeychainCrypto
import KeychainKeys

/// Keys and certificates as PEM files (`/.keys/<label>.pem`, `/.certificates/<label>.pem`): the
/// item's secret (Apple's external representation of the key, the certificate's DER) is turned
/// into PEM at open, in guarded memory; `stat` knows the PEM's length from the secret's length
/// without decrypting it. These files are read-only.
enum PEMFiles {
    /// The PEM length of a key or certificate entry; nil for other classes (their size is the secret's).
    static func size(_ e: FileEntry) -> Int? {
        switch e.itemClass {
        case .certificate: return PEM.certificateLength(derLength: e.size)
        case .key:
            guard let type = keyType(e) else { return 0 }
            return PEM.privateKeyLength(type: type, appleLength: e.size) ?? 0
        case .genericPassword, .internetPassword: return nil
        }
    }

    /// A key's `type` (73, 42), stored as a number or a numeric string.
    static func keyType(_ e: FileEntry) -> Int64? {
        switch e.attributes[.keyType] {
        case .number(let n)?: return n
        case .string(let s)?: return Int64(s)
        default: return nil
        }
    }

    /// The file's contents for `secret`, the item's secret: itself for a password, PEM for a key
    /// or certificate (the secret is wiped then).
    /// - Throws: `decode` when the bytes are not the key or certificate the item says.
    static func contents(_ e: FileEntry, secret: SecureBytes) throws -> SecureBytes {
        guard FileNames.isFlat(e.itemClass) else { return secret }
        defer { secret.wipe() }
        do {
            if e.itemClass == .certificate { return try PEM.certificate(der: secret) }
            guard let type = keyType(e) else { throw KeychainStatus.decode }
            return try PEM.privateKey(type: type, apple: secret)
        } catch CryptoError.allocationFailed {
            throw CryptoError.allocationFailed
        } catch {
            throw KeychainStatus.decode
        }
    }
}
