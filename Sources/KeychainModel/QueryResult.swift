import KeychainCrypto

/// One item as a search returns it with `r_Attributes` or several return keys.
public struct FoundItem: Sendable {
    /// Attributes with Apple's raw keys, including `class`; empty unless `r_Attributes` was asked.
    public var attributes: Attributes
    /// The secret (`v_Data`), when `r_Data` was asked. Empty for an item without data.
    public var secret: SecureBytes?
    /// The persistent reference (`v_PersistentRef`), when `r_PersistentRef` was asked.
    public var persistentRef: [UInt8]?

    public init(attributes: Attributes, secret: SecureBytes?, persistentRef: [UInt8]?) {
        self.attributes = attributes
        self.secret = secret
        self.persistentRef = persistentRef
    }
}

/// One returned value, shaped by the return keys.
public enum ReturnedValue: Sendable {
    /// `r_Data` alone.
    case data(SecureBytes)
    /// `r_PersistentRef` alone.
    case persistentRef([UInt8])
    /// `r_Attributes`, or several return keys.
    case item(FoundItem)

    public var item: FoundItem? { if case .item(let i) = self { return i }; return nil }
    public var data: SecureBytes? { if case .data(let d) = self { return d }; return nil }
}

/// The result of a search or of an add with return keys.
public enum QueryResult: Sendable {
    /// No return key: the status alone.
    case none
    /// `kSecMatchLimitOne`: one bare value.
    case value(ReturnedValue)
    /// `kSecMatchLimitAll` or a number: an array, even for one hit, in insertion order.
    case array([ReturnedValue])

    public var value: ReturnedValue? { if case .value(let v) = self { return v }; return nil }
    public var array: [ReturnedValue]? { if case .array(let a) = self { return a }; return nil }
}
