/// How many results a search returns (`m_Limit`).
public enum MatchLimit: Equatable, Sendable {
    case one, all, count(Int)
}

/// What a search returns (`r_*` keys).
struct ReturnKeys: Equatable {
    var data = false, attributes = false, persistentRef = false, ref = false
    var any: Bool { data || attributes || persistentRef || ref }

    /// Records one `r_…` key. - Throws: `param` for an unknown key or a value that is not a flag.
    mutating func set(_ key: AttributeKey, _ value: AttributeValue) throws {
        let on = try ParsedQuery.flag(value)
        switch key {
        case .returnData: data = on
        case .returnAttributes: attributes = on
        case .returnPersistentRef: persistentRef = on
        case .returnRef: ref = on
        default: throw KeychainStatus.param
        }
    }
    var count: Int { (data ? 1 : 0) + (attributes ? 1 : 0) + (persistentRef ? 1 : 0) + (ref ? 1 : 0) }

    /// `r_Ref` by class, as Apple treats it: a password has no object reference, so alone it is a
    /// bad query and beside other return keys it is ignored. A key's reference (`SecKey`) is built
    /// by the client from the item's attributes (the public key is one, `pubk`) and its persistent
    /// reference, which names the item when the daemon signs or decrypts with it: the private
    /// key's bytes are not returned. A certificate's reference (`SecCertificate`) is built from
    /// its DER, the item's data, which is returned with the attributes and persistent reference.
    mutating func resolveReference(for itemClass: ItemClass) throws {
        guard ref else { return }
        switch itemClass {
        case .genericPassword, .internetPassword:
            if count == 1 { throw KeychainStatus.param }
            ref = false
        case .key:
            ref = false
            attributes = true
            persistentRef = true
        case .certificate:
            ref = false
            data = true
            attributes = true
            persistentRef = true
        }
    }
}

/// A query dictionary parsed and checked against Apple's rules (PRODUCT 3). Public so a caller
/// holding a query decoded from the socket can check it without a vault.
public struct ParsedQuery {
    var itemClass: ItemClass
    /// Normalised attribute filters other than `accessGroup`, `synchronizable` and `accessible`.
    var filters: Attributes = [:]
    var group: String?
    /// nil matches both (`synchronizableAny`); a query without `synchronizable` sees only `false`.
    var synchronizable: Bool? = false
    var protection: ProtectionClass?
    var limit: MatchLimit = .one
    var returns = ReturnKeys()
    var persistentRef: PersistentRef?
    /// Secret Service attribute pairs an item must have (`matchSecretAttributes`), generic passwords only.
    var secretAttributes: [String: String] = [:]
    /// A lookup made without a dictionary (`init(itemClass:primaryKey:group:returns:)`): its
    /// filters, the class's primary key's values normalised, in `itemClass.primaryKey`'s order;
    /// `filters` is then empty. Nil for a query parsed from a dictionary.
    private(set) var primaryKeyFilters: [AttributeValue]?
    /// Every attribute of the class's primary key has a filter: the search can look the item up
    /// by its primary-key token.
    var namesPrimaryKey: Bool { primaryKeyFilters != nil || itemClass.primaryKey.allSatisfy { filters[$0] != nil } }

    /// The filter of the attribute `name`, wherever the query keeps it.
    func filter(_ name: AttributeKey) -> AttributeValue? {
        guard let values = primaryKeyFilters else { return filters[name] }
        return itemClass.primaryKey.firstIndex(of: name).map { values[$0] }
    }

    /// Whether an item's attributes, read by `value`, pass every filter (`Vault.matches`).
    func matchesFilters(_ value: (AttributeKey) -> AttributeValue?) -> Bool {
        guard let values = primaryKeyFilters else { return Vault.matches(filters: filters, itemClass: itemClass, value) }
        for (key, wanted) in zip(itemClass.primaryKey, values) where !Vault.matches(key, wanted, itemClass: itemClass, value) {
            return false
        }
        return true
    }

    public enum Operation: CaseIterable, Sendable { case search, update, delete }

    /// Parses a search, update or delete query.
    /// - Throws: `param` for a missing class, bad values or keys the operation does not allow,
    ///   `noSuchClass` for an unknown class, `noSuchAttr` for an attribute the class lacks.
    public init(_ query: Attributes, operation: Operation) throws {
        // Each key sets its own part, so the order does not change a query that parses; one
        // with several faults must always report the same one, so after a fault the keys are
        // parsed again, sorted, from the start.
        do {
            self = try ParsedQuery(query, operation: operation, sorted: false)
        } catch {
            self = try ParsedQuery(query, operation: operation, sorted: true)
        }
    }

    /// A search for one password by its class's whole primary key, made without a query
    /// dictionary: what `init(_:operation: .search)` makes of the query `[class, the primary
    /// key's attributes, agrp when given, the return keys]`, with the same checks of the
    /// values (a filter's value normalised, errSecParam for one the attribute cannot hold, or
    /// for a count of values other than the primary key's).
    /// - Parameter primaryKey: the values of `itemClass.primaryKey`'s attributes, in its order.
    init(itemClass: ItemClass, primaryKey: [AttributeValue], group: String?, returns: ReturnKeys) throws {
        let kinds = Self.primaryKeyKinds(itemClass)
        guard primaryKey.count == kinds.count else { throw KeychainStatus.param }  // not the whole primary key
        self.itemClass = itemClass
        var values = primaryKey
        for i in values.indices {
            guard let kind = kinds[i] else { throw KeychainStatus.noSuchAttr }
            guard let v = normalize(values[i], kind: kind) else { throw KeychainStatus.param }
            if v != values[i] { values[i] = v }  // most values are kept as given: no copy of the array
        }
        primaryKeyFilters = values
        self.group = group
        self.returns = returns
        try self.returns.resolveReference(for: itemClass)
    }

    /// The kinds of a class's primary-key attributes (`ItemClass.kind(ofKnown:)`), in its order.
    private static func primaryKeyKinds(_ c: ItemClass) -> [AttributeKind?] {
        switch c {
        case .genericPassword: return genericPasswordKinds
        case .internetPassword: return internetPasswordKinds
        case .certificate: return certificateKinds
        case .key: return keyKinds
        }
    }
    private static let genericPasswordKinds = kinds(.genericPassword), internetPasswordKinds = kinds(.internetPassword),
                       certificateKinds = kinds(.certificate), keyKinds = kinds(.key)
    private static func kinds(_ c: ItemClass) -> [AttributeKind?] { c.primaryKey.map { c.kind(ofKnown: $0) } }

    /// One parse, the keys in the dictionary's order or sorted.
    private init(_ query: Attributes, operation: Operation, sorted: Bool) throws {
        var ref: PersistentRef?
        if let value = query[.valuePersistentRef] {
            guard case .data(let bytes) = value, let parsed = PersistentRef(bytes: bytes) else { throw KeychainStatus.param }
            ref = parsed
        }
        if let classValue = query[.class] {
            guard case .string(let name) = classValue else { throw KeychainStatus.param }
            guard let c = ItemClass(name: name) else { throw KeychainStatus.noSuchClass }
            itemClass = c
        } else if let ref {
            itemClass = ref.itemClass
        } else {
            throw KeychainStatus.param
        }
        persistentRef = ref
        filters.reserveCapacity(query.count)  // one allocation, not one per growth

        if sorted {
            for (key, value) in query.sorted(by: { $0.key < $1.key }) where key != .class && key != .valuePersistentRef {
                try take(key, value, operation: operation)
            }
        } else {
            for (key, value) in query where key != .class && key != .valuePersistentRef {
                try take(key, value, operation: operation)
            }
        }
        try returns.resolveReference(for: itemClass)
        // A persistent reference names one item, whatever its `sync`: the default "not
        // synchronizable" filter does not apply unless the query sets `sync` itself.
        if ref != nil && query[.synchronizable] == nil { synchronizable = nil }
    }

    /// One key of a query other than the class and a persistent reference.
    private mutating func take(_ key: AttributeKey, _ value: AttributeValue, operation: Operation) throws {
        // An attribute's name (most keys) is in no family: a filter, without a test per family.
        if !key.mayHaveFamilyPrefix && key != .useDataProtectionKeychain { return try addFilter(key, value) }
        if key.hasPrefix(.return) {
            guard operation == .search else { throw KeychainStatus.param }
            try returns.set(key, value)
        } else if key.hasPrefix(.match) {
            // macOS-style callers send a limit with delete; update takes none.
            guard operation != .update else { throw KeychainStatus.param }
            if key == .matchLimit { limit = try Self.limit(value) }
            if key == .matchSecretAttributes {
                guard itemClass == .genericPassword, case .data(let blob) = value,
                      let pairs = SecretServicePairs.decode(blob) else { throw KeychainStatus.param }
                secretAttributes = pairs.attributes
            }
            if operation == .search { try Self.checkMatchValue(key, value) }
        } else if key.hasPrefix(.use) || key == .useDataProtectionKeychain {
            return  // authentication UI and keychain-selection hints: the daemon's concern
        } else if key == .valueData {
            return  // Apple keeps a value in a search or delete query and does not match on it
        } else if key.hasPrefix(.value) {
            throw KeychainStatus.param
        } else {
            try addFilter(key, value)
        }
    }

    private mutating func addFilter(_ key: AttributeKey, _ value: AttributeValue) throws {
        guard let kind = itemClass.kind(ofKnown: key) else { throw KeychainStatus.noSuchAttr }
        switch key {
        case .accessGroup:
            guard case .string(let g) = value else { throw KeychainStatus.param }
            group = g
        case .synchronizable:
            if value == .synchronizableAny { synchronizable = nil; return }
            guard let n = normalize(value, for: key)?.integerView else { throw KeychainStatus.param }
            synchronizable = n != 0
        case .accessible:
            guard case .string(let name) = value, let p = ProtectionClass(rawValue: name) else { throw KeychainStatus.param }
            protection = p
        default:
            guard let v = normalize(value, kind: kind) else { throw KeychainStatus.param }
            filters[key] = v
        }
    }

    static func flag(_ value: AttributeValue) throws -> Bool {
        switch value {
        case .bool(let b): return b
        case .number(let n): return n != 0
        default: throw KeychainStatus.param
        }
    }

    /// The match keys of a search, as Apple's securityd takes them (`query_add_match`): every
    /// `m_` key is recorded, and only the limit and the certificate filters look at their value.
    /// A filter's value of the wrong type is `param`; a certificate policy always is, as a
    /// `SecPolicy` cannot be sent here. The other keys (case, diacritic and width folding, the
    /// subject and e-mail matches, item and search lists, issuers, unknown names) are accepted
    /// with any value and ignored: securityd records them without interpreting them.
    /// The filters themselves are not applied (docs/security-api.md, "Differences").
    /// - Throws: `param` for a value securityd refuses.
    static func checkMatchValue(_ key: AttributeKey, _ value: AttributeValue) throws {
        switch (key, value) {
        case (.matchPolicy, _): throw KeychainStatus.param  // securityd takes only an array of one SecPolicy
        case (.matchValidOnDate, .date): return
        case (.matchValidOnDate, _): throw KeychainStatus.param
        case (.matchTrustedOnly, .bool): return
        case (.matchTrustedOnly, _): throw KeychainStatus.param  // a CFBoolean, not a number
        default: return
        }
    }

    static func limit(_ value: AttributeValue) throws -> MatchLimit {
        switch value {
        case .matchLimitOne: return .one
        case .matchLimitAll: return .all
        case .number(let n) where n >= 1: return n == 1 ? .count(1) : .count(Int(n))
        default: throw KeychainStatus.param
        }
    }

    /// Filters that only a decrypted attribute blob can answer.
    var needsAttributes: Bool {
        filters.keys.contains { !itemClass.primaryKey.contains($0) }
    }

    /// The attributes a search must open to decide on an item when it returns none of them: the
    /// clear columns' checks, the presence gate, what `Vault.isUnextractable` and `isSensitive` read, and the
    /// filters, when these are all primary-key attributes (the common lookup) and no Secret
    /// Service pairs are asked; nil (every attribute) otherwise.
    var checkedAttributes: AttributeSelection? {
        guard !returns.attributes, secretAttributes.isEmpty,
              filters.keys.allSatisfy({ itemClass.primaryKey.contains($0) }) else { return nil }
        switch itemClass {
        case .genericPassword: return Self.checkedGenericPassword
        case .internetPassword: return Self.checkedInternetPassword
        case .certificate: return Self.checkedCertificate
        case .key: return Self.checkedKey
        }
    }

    private static let checkedGenericPassword = checked(.genericPassword)
    private static let checkedInternetPassword = checked(.internetPassword)
    private static let checkedCertificate = checked(.certificate)
    private static let checkedKey = checked(.key)
    private static func checked(_ c: ItemClass) -> AttributeSelection {
        AttributeSelection([.accessible, .synchronizable, .accessGroup, .accessControl, .keyClass, .isExtractable, .isSensitive]
                           + c.primaryKey)
    }

    /// True when the result is an array (`m_LimitAll` or a number, even for one hit).
    var returnsArray: Bool { limit != .one }

    var maximumCount: Int {
        switch limit {
        case .one: return 1
        case .all: return Int.max
        case .count(let n): return n
        }
    }
}
