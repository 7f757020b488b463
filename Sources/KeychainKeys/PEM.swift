import COpenSSL
import KeychainCrypto

/// PEM text of keys and certificates, written by libcrypto (`PEM_write_bio_*`) into a memory
/// BIO on its secure heap (`BIO_s_secmem`, cleared when freed) and handed back in guarded memory:
/// the mount's `/.keys` and `/.certificates` files.
public enum PEM {
    /// A private key in Apple's external representation (`type` 73 EC, 42 RSA; Ed25519's raw
    /// seed) as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as `openssl pkey`
    /// writes it.
    /// - Throws: `invalidKeyData` when the bytes are not a private key of `type`; `library`.
    public static func privateKey(type: Int64, apple bytes: SecureBytes) throws -> SecureBytes {
        let key = try bytes.withUnsafeBytes { try AsymmetricKey.apple(type: type, isPrivate: true, $0) }
        return try write { PEM_write_bio_PrivateKey($0, key.pkey, nil, nil, 0, nil, nil) }
    }

    /// A certificate as PEM (`-----BEGIN CERTIFICATE-----`).
    /// - Throws: `invalidKeyData` when `der` is not one DER certificate; `library`.
    public static func certificate(der: SecureBytes) throws -> SecureBytes {
        let certificate = try der.withUnsafeBytes { try Certificate(der: Array($0)) }
        return try certificate.withX509 { x in try write { PEM_write_bio_X509($0, x) } }
    }

    /// The length of `certificate(der:)` for DER of `derLength` bytes, known without the bytes.
    public static func certificateLength(derLength: Int) -> Int {
        armoredLength(derLength, label: "CERTIFICATE")
    }

    /// The length of `privateKey(type:apple:)` for a key whose Apple representation has
    /// `appleLength` bytes, known without the bytes: PKCS#8 wraps an RSA key's PKCS#1 DER in
    /// fixed fields, an EC key's PKCS#8 has one length per curve, and an Ed25519 key's is 48
    /// bytes (RFC 8410: the seed in fixed fields). Nil for other types.
    public static func privateKeyLength(type: Int64, appleLength: Int) -> Int? {
        switch type {
        case 42:
            // SEQUENCE { INTEGER 0, AlgorithmIdentifier { rsaEncryption, NULL }, OCTET STRING { PKCS#1 } }
            let octets = 1 + lengthOfLength(appleLength) + appleLength
            let content = 3 + 15 + octets
            return armoredLength(1 + lengthOfLength(content) + content, label: "PRIVATE KEY")
        case 73:
            guard let curve = Curve.allCases.first(where: { $0.privateLength == appleLength }) else { return nil }
            return ecLengths[curve]
        case AsymmetricKey.ed25519TypeCode:
            // SEQUENCE { INTEGER 0, AlgorithmIdentifier { id-Ed25519 }, OCTET STRING { OCTET STRING { seed } } }
            guard appleLength == 32 || appleLength == 64 else { return nil }
            return armoredLength(48, label: "PRIVATE KEY")
        default:
            return nil
        }
    }

    /// The PEM length of one EC key per curve, measured once on a key made for the purpose:
    /// OpenSSL pads the scalar to the curve's size, so every key of a curve has it.
    private static let ecLengths: [Curve: Int] = {
        var out: [Curve: Int] = [:]
        for curve in Curve.allCases {
            if let key = try? AsymmetricKey.generate(curve),
               let pem = try? write({ PEM_write_bio_PrivateKey($0, key.pkey, nil, nil, 0, nil, nil) }) {
                out[curve] = pem.count
                pem.wipe()
            }
        }
        return out
    }()

    private static func lengthOfLength(_ n: Int) -> Int { n < 0x80 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : 4 }

    /// `-----BEGIN label-----`, base64 in lines of 64, `-----END label-----`, each line ending in `\n`.
    private static func armoredLength(_ der: Int, label: String) -> Int {
        let base64 = 4 * ((der + 2) / 3)
        return "-----BEGIN \(label)-----\n".utf8.count + base64 + (base64 + 63) / 64 + "-----END \(label)-----\n".utf8.count
    }

    /// What `body` writes into a secure-heap memory BIO, copied into guarded memory.
    static func write(_ body: (OpaquePointer) -> Int32) throws -> SecureBytes {
        _ = LibCrypto.ready
        let bio = try LibCrypto.notNil(BIO_new(BIO_s_secmem()))
        defer { BIO_free(bio) }
        try LibCrypto.check(body(bio))
        let pending = Int(BIO_ctrl_pending(bio))
        let out = try SecureBytes(count: pending)
        let read = out.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(pending)) }
        guard Int(read) == pending else {
            out.wipe()
            throw KeyError.library
        }
        return out
    }
}
