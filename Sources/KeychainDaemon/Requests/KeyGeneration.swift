import KeychainCore
import KeychainCrypto
import KeychainKeys
import KeychainProtocol

/// Private keys made in the daemon: an add of a `kcls` 1 key item with the option `generate`
/// and no secret (`SecKeyCreateRandomKey` with `kSecAttrIsPermanent`) gets a new key of the
/// item's `type` and `bsiz`, made here by libcrypto and stored as the item's secret, so the
/// private key never exists in the calling process.
enum KeyGeneration {
    /// The add's attributes and secret: as given, or for a generated key its bytes (in guarded
    /// memory; the caller wipes them), with `klbl` (Apple's application label, SHA-1 of the
    /// public key) unless the caller gave one, and `bsiz`/`esiz` of the key made.
    /// - Throws: errSecParam for a generation that is not of a private key item, that comes
    ///   with a secret, or of a type or size the keychain does not make (EC 256, 384, 521;
    ///   RSA 1024-4096 in whole bytes; Ed25519, 256).
    static func prepare(_ request: ItemAdd) throws -> (query: Attributes, secret: SecureBytes?, generated: Bool) {
        guard let mode = request.generate else { return (request.attributes, request.secret, false) }
        guard mode == ItemAdd.privateKey, request.secret == nil, StoredKeyFacts.isKeyItem(request.attributes),
              request.attributes[.keyClass]?.numberValue == 1 else { throw KeychainStatus.param }
        let bits = request.attributes[.keySizeInBits]?.numberValue
        let key: AsymmetricKey
        switch request.attributes[.keyType]?.numberValue {
        case 73:
            guard let curve = Curve(rawValue: Int(clamping: bits ?? 256)) else { throw KeychainStatus.param }
            key = try AsymmetricKey.generate(curve)
        case 42:
            let size = Int(clamping: bits ?? 2048)
            guard AsymmetricKey.rsaSizes.contains(size), size % 8 == 0 else { throw KeychainStatus.param }
            key = try AsymmetricKey.generateRSA(bits: size)
        case AsymmetricKey.ed25519TypeCode:
            guard bits == nil || bits == 256 else { throw KeychainStatus.param }
            key = try AsymmetricKey.generateEd25519()
        default:
            throw KeychainStatus.param
        }
        var query = request.attributes
        if query[.applicationLabel] == nil { query[.applicationLabel] = .data(DigestAlgorithm.sha1.hash(key.publicBytes())) }
        query[.keySizeInBits] = .number(Int64(key.sizeInBits))
        query[.effectiveKeySize] = .number(Int64(key.sizeInBits))
        return (query, try key.privateBytes(), true)
    }
}
