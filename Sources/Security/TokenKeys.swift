import KeychainCore
import KeychainProtocol

/// `SecKeyCreateRandomKey` with `kSecAttrTokenID: kSecAttrTokenIDSecureEnclave`: the daemon makes
/// the P-256 key inside its TPM and stores only the TPM-wrapped key (docs/tpm.md). The private
/// key stays there: it signs through the daemon and has no external representation.
enum TokenKeys {
    static let secureEnclave = "com.apple.setoken"

    /// - Throws: errSecUnimplemented for another token or a key that is not permanent (it could
    ///   live nowhere but the daemon), errSecParam for a type or size other than EC P-256,
    ///   errSecNotAvailable when the daemon has no TPM, the keychain's status otherwise.
    static func create(_ params: NSDictionary) throws -> SecKey {
        let token = (params["tkid"] as? String) ?? (params["tkid"] as? NSString).map { $0 as String }
        guard token == secureEnclave else { throw KeyFailure.unsupported("the only token is kSecAttrTokenIDSecureEnclave") }
        guard KeyParameters.number(params["type"]) == 73, KeyParameters.number(params["bsiz"]) ?? 256 == 256 else {
            throw KeyFailure.param("Secure Enclave keys are EC P-256 (kSecAttrKeyTypeECSECPrimeRandom, 256 bits)")
        }
        let privateParams = KeyParameters.merged(params, "private")
        guard KeyParameters.flag(privateParams["perm"]) else {
            throw KeyFailure.unsupported("a Secure Enclave key lives in the daemon's TPM: set kSecAttrIsPermanent")
        }
        for k in ["v_Ref", "v_Data", "perm", "class"] { privateParams.removeObject(forKey: k as NSString) }
        var (query, _) = try Conversion.attributes(privateParams, extractData: false)
        let fixed: Attributes = [
            "class": "keys", "kcls": .number(1), "type": .number(73), "bsiz": .number(256), "esiz": .number(256),
            "tkid": .string(secureEnclave), "perm": .bool(true), "priv": .bool(true), "modi": .bool(true),
            "sign": .bool(true), "vrfy": .bool(false), "decr": .bool(false), "encr": .bool(false),
            "wrap": .bool(false), "unwp": .bool(false), "drve": .bool(true), "r_Ref": .bool(true),
        ]
        for (k, v) in fixed { query[k] = v }
        let response = try KeychainConnection.shared.send(Request(.add, query: query))
        guard case .value(.item(let item)) = response.result else { throw KeychainStatus.decode }
        return try KeyItems.secKey(item)
    }
}
