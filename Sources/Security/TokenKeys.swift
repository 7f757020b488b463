import KeychainModel
import KeychainProtocol

/// `SecKeyCreateRandomKey` with `kSecAttrTokenID: kSecAttrTokenIDSecureEnclave`: the daemon makes
/// the P-256 key inside its TPM and stores only the TPM-wrapped key (docs/tpm.md). The private
/// key stays there: it signs and agrees on secrets through the daemon and has no external
/// representation.
enum TokenKeys {
    /// - Throws: errSecUnimplemented for another token or a key that is not permanent (it could
    ///   live nowhere but the daemon), errSecParam for a type or size other than EC P-256,
    ///   errSecNotAvailable when the daemon has no TPM, the keychain's status otherwise.
    static func create(_ params: NSDictionary) throws -> SecKey {
        let token = (params[kSecAttrTokenID] as? String) ?? (params[kSecAttrTokenID] as? NSString).map { $0 as String }
        guard token == ValueName.tokenIDSecureEnclave else {
            throw KeyFailure.unsupported("the only token is kSecAttrTokenIDSecureEnclave")
        }
        guard KeyParameters.number(params[kSecAttrKeyType]) == 73, KeyParameters.number(params[kSecAttrKeySizeInBits]) ?? 256 == 256 else {
            throw KeyFailure.param("Secure Enclave keys are EC P-256 (kSecAttrKeyTypeECSECPrimeRandom, 256 bits)")
        }
        let privateParams = KeyParameters.merged(params, "private")
        guard KeyParameters.flag(privateParams[kSecAttrIsPermanent]) else {
            throw KeyFailure.unsupported("a Secure Enclave key lives in the daemon's TPM: set kSecAttrIsPermanent")
        }
        for k in [kSecValueRef, kSecValueData, kSecAttrIsPermanent, kSecClass] { privateParams.removeObject(forKey: k) }
        var (query, _) = try Conversion.attributes(privateParams, extractData: false)
        let fixed: Attributes = [
            .class: .itemClass(.key), .keyClass: .number(1), .keyType: .number(73), .keySizeInBits: .number(256),
            .effectiveKeySize: .number(256), .tokenID: .string(ValueName.tokenIDSecureEnclave),
            .isPermanent: .bool(true), .isPrivate: .bool(true), .isModifiable: .bool(true),
            .canSign: .bool(true), .canVerify: .bool(false), .canDecrypt: .bool(false), .canEncrypt: .bool(false),
            .canWrap: .bool(false), .canUnwrap: .bool(false), .canDerive: .bool(true), .returnRef: .bool(true),
        ]
        for (k, v) in fixed { query[k] = v }
        let response = try KeychainConnection.shared.send(Request(.add, query: query))
        guard case .value(.item(let item)) = response.result else { throw KeychainStatus.decode }
        return try KeyItems.secKey(item)
    }
}
