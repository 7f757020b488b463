/// Apple's keychain item classes, their primary keys and the attributes each accepts.
public enum ItemClass: String, CaseIterable, Sendable {
    case genericPassword = "genp"
    case internetPassword = "inet"
    case certificate = "cert"
    case key = "keys"

    /// The small integer stored in the clear `cls` column and in associated data; frozen.
    public var code: UInt8 {
        switch self {
        case .genericPassword: return 1
        case .internetPassword: return 2
        case .certificate: return 3
        case .key: return 4
        }
    }

    public init?(code: UInt8) {
        guard let c = ItemClass.allCases.first(where: { $0.code == code }) else { return nil }
        self = c
    }

    /// The primary key, without `accessGroup` and `synchronizable`, which every class adds.
    /// Each of these attributes also gets a blind lookup token.
    /// Arrays made once: every search reads its class's.
    public var primaryKey: [AttributeKey] {
        switch self {
        case .genericPassword: return Self.genericPasswordKey
        case .internetPassword: return Self.internetPasswordKey
        case .certificate: return Self.certificateKey
        case .key: return Self.keyKey
        }
    }

    private static let genericPasswordKey: [AttributeKey] = [.account, .service]
    private static let internetPasswordKey: [AttributeKey] = [.account, .securityDomain, .server, .protocol, .authenticationType,
                                                              .port, .path]
    private static let certificateKey: [AttributeKey] = [.certificateType, .issuer, .serialNumber]
    private static let keyKey: [AttributeKey] = [.keyClass, .applicationLabel, .applicationTag, .creator, .keyType, .keySizeInBits,
                                                 .effectiveKeySize, .startDate, .endDate]

    /// Attributes a caller may set, besides `agrp`, `sync`, `pdmn` and the primary key.
    package var otherAttributes: Set<AttributeKey> {
        let common: Set<AttributeKey> = [.label, .description, .comment, .creator, .type, .generic, .isInvisible,
                                         .isNegative, .alias]
        switch self {
        case .genericPassword, .internetPassword: return common
        case .certificate:
            return [.label, .alias, .certificateEncoding, .subject, .subjectKeyID, .publicKeyHash, .creator, .type]
        case .key:
            return [.label, .alias, .isPermanent, .isPrivate, .isModifiable, .isSensitive, .alwaysSensitive,
                    .isExtractable, .neverExtractable, .canEncrypt, .canDecrypt, .canDerive, .canSign, .canVerify,
                    .canSignRecover, .canVerifyRecover, .canWrap, .canUnwrap, .tokenID, .publicKey]
        }
    }

    /// A key item's public key in Apple's external representation, set by the daemon from the
    /// key's bytes when the item is added (not one of Apple's attributes): with it a client
    /// holds a stored key's public half while the private half stays in the daemon.
    public static let publicKeyAttribute = AttributeKey.publicKey

    /// Every attribute name that is valid for this class, including store-managed dates.
    /// Built once per class: every query checks each of its keys against it.
    public var knownAttributes: Set<AttributeKey> {
        switch self {
        case .genericPassword: return Self.knownGenericPassword
        case .internetPassword: return Self.knownInternetPassword
        case .certificate: return Self.knownCertificate
        case .key: return Self.knownKey
        }
    }

    /// The kind of `name` when it is one of this class's attributes, else nil: a query checks
    /// and normalises each key with this one lookup.
    package func kind(ofKnown name: AttributeKey) -> AttributeKind? {
        switch self {
        case .genericPassword: return Self.kindsGenericPassword[name]
        case .internetPassword: return Self.kindsInternetPassword[name]
        case .certificate: return Self.kindsCertificate[name]
        case .key: return Self.kindsKey[name]
        }
    }

    private static let kindsGenericPassword = ItemClass.genericPassword.attributeKinds
    private static let kindsInternetPassword = ItemClass.internetPassword.attributeKinds
    private static let kindsCertificate = ItemClass.certificate.attributeKinds
    private static let kindsKey = ItemClass.key.attributeKinds

    private var attributeKinds: [AttributeKey: AttributeKind] {
        Dictionary(uniqueKeysWithValues: allAttributes.map { ($0, AttributeKind.of($0)) })
    }

    private static let knownGenericPassword = ItemClass.genericPassword.allAttributes
    private static let knownInternetPassword = ItemClass.internetPassword.allAttributes
    private static let knownCertificate = ItemClass.certificate.allAttributes
    private static let knownKey = ItemClass.key.allAttributes

    private var allAttributes: Set<AttributeKey> {
        otherAttributes.union(primaryKey)
            .union([.accessGroup, .synchronizable, .accessible, .creationDate, .modificationDate, .accessControl])
    }

    /// Parses an Apple class name (`genp`) or its constant name (`kSecClassGenericPassword`).
    public init?(name: String) {
        if let c = ItemClass(rawValue: name) { self = c; return }
        switch name {
        case "kSecClassGenericPassword": self = .genericPassword
        case "kSecClassInternetPassword": self = .internetPassword
        case "kSecClassCertificate": self = .certificate
        case "kSecClassKey": self = .key
        default: return nil
        }
    }
}

/// How attribute values are normalised, following Apple's schema types.
package enum AttributeKind {
    case bytes, number, boolean, date

    /// One hash lookup: every query value is normalised by its kind.
    package static func of(_ name: AttributeKey) -> AttributeKind { kinds[name] ?? .bytes }

    private static let kinds: [AttributeKey: AttributeKind] = {
        var table: [AttributeKey: AttributeKind] = [:]
        for name: AttributeKey in [.protocol, .port, .type, .creator, .keySizeInBits, .effectiveKeySize, .keyClass,
                                   .certificateType, .certificateEncoding] { table[name] = .number }
        for name: AttributeKey in [.isInvisible, .isNegative, .synchronizable, .isPermanent, .isPrivate, .isModifiable,
                                   .isSensitive, .alwaysSensitive, .isExtractable, .neverExtractable, .canEncrypt,
                                   .canDecrypt, .canDerive, .canSign, .canVerify, .canSignRecover, .canVerifyRecover,
                                   .canWrap, .canUnwrap] { table[name] = .boolean }
        for name: AttributeKey in [.creationDate, .modificationDate, .startDate, .endDate] { table[name] = .date }
        return table
    }()

    /// The value a missing primary-key attribute counts as.
    package var empty: AttributeValue {
        switch self {
        case .bytes: return .data([])
        case .number, .boolean: return .number(0)
        case .date: return .date(0)
        }
    }
}

/// Store-side normalisation: numeric strings become numbers for numeric attributes, booleans
/// become 0/1. Returns nil for a value of a type the attribute cannot hold.
package func normalize(_ value: AttributeValue, for name: AttributeKey) -> AttributeValue? {
    normalize(value, kind: AttributeKind.of(name))
}

/// The same for an attribute of that kind.
package func normalize(_ value: AttributeValue, kind: AttributeKind) -> AttributeValue? {
    switch kind {
    case .number:
        switch value {
        case .number: return value
        case .bool(let b): return .number(b ? 1 : 0)
        case .string(let s): return Int64(s).map(AttributeValue.number) ?? value
        case .data: return value
        case .date: return nil
        }
    case .boolean:
        switch value {
        case .bool(let b): return .number(b ? 1 : 0)
        case .number(let n): return .number(n != 0 ? 1 : 0)
        case .string(let s):
            if let n = Int64(s) { return .number(n != 0 ? 1 : 0) }
            return nil
        default: return nil
        }
    case .date:
        switch value {
        case .date: return value
        case .number(let n): return .date(Double(n))
        default: return nil
        }
    case .bytes:
        switch value {
        case .string, .data: return value
        case .number, .bool: return value
        case .date: return nil
        }
    }
}
