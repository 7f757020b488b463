import KeychainModel
import KeychainCrypto

/// Between Apple's dictionaries (any mix of String, NSString, Data, NSNumber, Bool, Date,
/// optionals, SecAccessControl) and the engine's attribute values.
enum Conversion {
    /// A query or attribute dictionary as attributes; `v_Data` comes out separately, into
    /// guarded memory, when `extractData` is set.
    /// - Throws: `param` for a key or value of a type the keychain cannot hold.
    static func attributes(_ dict: NSDictionary, extractData: Bool) throws -> (Attributes, SecureBytes?) {
        var out: Attributes = [:]
        out.reserveCapacity(dict.count)
        var secret: SecureBytes?
        var failure: (any Error)?
        // Each pair as the dictionary holds it: its iterator looks each key up again, which
        // hashed every key a second time and was most of a call's cost.
        dict.enumerateKeysAndObjects { k, v, stop in
            do {
                let key: AttributeKey
                if let s = k as? String { key = AttributeKey(rawValue: s) } else if let s = k as? NSString { key = AttributeKey(rawValue: s as String) } else { throw KeychainStatus.param }
                guard let value = unwrap(v) else { return }  // nil inside an optional: as if absent
                if extractData && key == .valueData {
                    if let d = value as? Data { secret = try SecureBytes(copying: d) }
                    else if let s = value as? String { secret = try SecureBytes(copying: s.utf8) }  // no array of the secret left behind
                    else { throw KeychainStatus.param }
                    return
                }
                out[key] = try attribute(value)
            } catch {
                failure = error
                stop.pointee = true
            }
        }
        if let failure { throw failure }
        return (out, secret)
    }

    /// Optionals put into an `Any` are unwrapped; nil gives nil. A cast, not a `Mirror`: this
    /// runs for every value of every call.
    static func unwrap(_ v: Any) -> Any? {
        // Most values are Foundation objects, never optionals: a class check costs less than
        // the protocol's.
        if v is NSObject { return v }
        guard let optional = v as? AnyOptional else { return v }
        guard let inner = optional.wrappedValue else { return nil }
        return unwrap(inner)
    }

    static func isBoolean(_ v: Any) -> Bool {
        let t = type(of: v)
        return t == Bool.self || (cfBooleanType.map { t == $0 } ?? false)
    }

    /// The class Foundation gives `kCFBooleanTrue` and its kind (`__NSCFBoolean`), found once;
    /// nil where booleans are plain `NSNumber`s, which then read as numbers.
    private static let cfBooleanType: Any.Type? = {
        let t: Any.Type = type(of: NSNumber(value: true) as Any)
        return String(describing: t) == "__NSCFBoolean" ? t : nil
    }()

    static func attribute(_ v: Any) throws -> AttributeValue {
        if isBoolean(v), let b = v as? Bool { return .bool(b) }
        if let s = v as? String { return .string(s) }
        if let s = v as? NSString { return .string(s as String) }
        if let d = v as? Data { return .data(Array(d)) }
        if let date = v as? Date { return .date(date.timeIntervalSinceReferenceDate) }
        if let control = v as? SecAccessControl { return control.control.value }
        if let n = v as? NSNumber { return .number(n.int64Value) }
        if let n = v as? Int { return .number(Int64(n)) }
        throw KeychainStatus.param
    }

    static func object(_ value: AttributeValue, key: AttributeKey) -> AnyObject {
        switch value {
        case .string(let s):
            if key == .accessControl, let c = AccessControl(value) { return SecAccessControl(c) }
            return s as NSString
        case .data(let d): return Data(d) as NSData
        case .number(let n): return NSNumber(value: n)
        case .bool(let b): return NSNumber(value: b)
        case .date(let t): return NSDate(timeIntervalSinceReferenceDate: t)
        }
    }

    static func data(_ secret: SecureBytes) -> NSData {
        secret.withUnsafeBytes { Data($0) } as NSData
    }

    static func object(_ v: ReturnedValue) -> AnyObject {
        switch v {
        case .data(let d): return data(d)
        case .persistentRef(let r): return Data(r) as NSData
        case .item(let item):
            let dict = NSMutableDictionary()
            for (k, value) in item.attributes { dict[k.rawValue as NSString] = object(value, key: k) }
            if let s = item.secret { dict[kSecValueData] = data(s) }
            if let r = item.persistentRef { dict[kSecValuePersistentRef] = Data(r) as NSData }
            return dict
        }
    }

    static func object(_ result: QueryResult) -> AnyObject? {
        switch result {
        case .none: return nil
        case .value(let v): return object(v)
        case .array(let a): return NSArray(array: a.map(object))
        }
    }
}

/// An `Optional` of any type, seen through `Any`.
private protocol AnyOptional {
    var wrappedValue: Any? { get }
}

extension Optional: AnyOptional {
    fileprivate var wrappedValue: Any? { map { $0 } }
}
