import KeychainModel
import KeychainCrypto
import KeychainKeys

/// `SecCertificate`s as `kSecClassCertificate` items: the DER is the item's data; the daemon
/// derives Apple's attributes from it (`ctyp`, `cenc`, `issr`, `subj`, `slnr`, `pkhh`, `skid`,
/// `labl`), so an add needs only the bytes and the caller's own attributes.
enum CertificateItems {
    /// The add query for `certificate` (`SecItemAdd` with `kSecValueRef`) with the caller's
    /// dictionary, less `v_Ref` and `v_Data`.
    /// - Throws: `param` when the dictionary names a class other than `kSecClassCertificate`.
    static func addQuery(parameters: NSDictionary) throws -> Attributes {
        let rest = parameters.mutableCopy() as! NSMutableDictionary
        for k in [kSecValueRef, kSecValueData] { rest.removeObject(forKey: k) }
        if let c = rest[kSecClass] {
            guard let name = (c as? String) ?? (c as? NSString).map({ $0 as String }), ItemClass(name: name) == .certificate else {
                throw KeychainStatus.param
            }
        }
        var (query, _) = try Conversion.attributes(rest, extractData: false)
        query[.class] = .string(ItemClass.certificate.rawValue)
        return query
    }

    static func value(_ certificate: SecCertificate) throws -> SecureBytes {
        try SecureBytes(copying: certificate.certificate.der)
    }

    static func isCertificateQuery(_ attrs: Attributes) -> Bool {
        if case .string(let name)? = attrs[.class] { return ItemClass(name: name) == .certificate }
        if case .data(let bytes)? = attrs[.valuePersistentRef] { return PersistentRef(bytes: bytes)?.itemClass == .certificate }
        return false
    }

    /// The `SecCertificate` of a certificate item returned with its data.
    /// - Throws: `decode` when the item's data is not a DER certificate.
    static func certificate(_ item: FoundItem) throws -> SecCertificate {
        guard let der = item.secret?.withUnsafeBytes({ Array($0) }),
              let parsed = try? Certificate(der: der) else { throw KeychainStatus.decode }
        return SecCertificate(parsed)
    }
}
