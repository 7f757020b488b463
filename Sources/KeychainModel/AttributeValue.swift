/// A value in an item's attribute dictionary or in a query, keyed by `AttributeKey`.
/// Strings and data are kept as given; numbers are integers; dates are seconds since
/// 2001-01-01 00:00:00 UTC (Apple's absolute time).
public enum AttributeValue: Hashable, Sendable {
    case string(String)
    case data([UInt8])
    case number(Int64)
    case bool(Bool)
    case date(Double)

    /// The bytes that matching and index tokens compare: strings and data by their bytes.
    package var byteView: [UInt8]? {
        switch self {
        case .string(let s): return Array(s.utf8)
        case .data(let d): return d
        default: return nil
        }
    }

    /// The integer that matching compares for numbers and booleans.
    package var integerView: Int64? {
        switch self {
        case .number(let n): return n
        case .bool(let b): return b ? 1 : 0
        default: return nil
        }
    }

    /// The string content, when this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// Value equality as matching sees it: numbers and booleans by value, strings and data by bytes.
    /// Compares bytes where they are: a search checks every filter of every candidate.
    package func matches(_ other: AttributeValue) -> Bool {
        if let a = integerView, let b = other.integerView { return a == b }
        switch (self, other) {
        case (.string(var a), .string(var b)):
            return a.withUTF8 { x in b.withUTF8 { y in x.elementsEqual(y) } }
        case (.string(var s), .data(let d)), (.data(let d), .string(var s)):
            return s.withUTF8 { x in d.withUnsafeBufferPointer { y in x.elementsEqual(y) } }
        case (.data(let a), .data(let b)): return a == b
        case (.date(let a), .date(let b)): return a == b
        default: return false
        }
    }
}

extension AttributeValue {
    /// A number given as a number or a numeric string (a key's `type` "73").
    public var numberValue: Int64? {
        switch self {
        case .number(let n): return n
        case .string(let s): return Int64(s)
        default: return nil
        }
    }
}

extension AttributeValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

/// Attributes or a query: Apple's keys (`AttributeKey`: `.class`, `.service`, `.returnData`, ...) to values.
public typealias Attributes = [AttributeKey: AttributeValue]

/// Named values that are not an item's attributes: a request's options, a reply's info, a group
/// record. Encoded as attributes are (`AttributeCoding`).
public typealias Fields = [String: AttributeValue]

extension Dictionary where Key == AttributeKey, Value == AttributeValue {
    /// Fields carried where the protocol holds attributes (the items of a group list).
    public init(fields: Fields) { self.init(uniqueKeysWithValues: fields.map { (AttributeKey(rawValue: $0.key), $0.value) }) }
    /// These entries by their raw names.
    public var fields: Fields { Fields(uniqueKeysWithValues: map { ($0.key.rawValue, $0.value) }) }
}
