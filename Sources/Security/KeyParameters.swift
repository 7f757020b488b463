import KeychainModel
import KeychainKeys

/// Reading the dictionaries of `SecKeyCreateRandomKey` and `SecKeyCreateWithData`.
enum KeyParameters {
    /// A number given as NSNumber or a numeric string (`kSecAttrKeyTypeEC` is the string "73").
    static func number(_ value: Any?) -> Int64? {
        guard let value else { return nil }
        if let n = value as? NSNumber, !Conversion.isBoolean(n) { return n.int64Value }
        if let s = value as? String { return Int64(s) }
        if let s = value as? NSString { return Int64(s as String) }
        return nil
    }

    static func flag(_ value: Any?) -> Bool {
        guard let value else { return false }
        if let b = value as? Bool { return b }
        if let n = value as? NSNumber { return n.intValue != 0 }
        return false
    }

    static func generate(type: Any?, size: Any?) throws -> AsymmetricKey {
        let bits = number(size)
        switch number(type) {
        case 73:
            guard let curve = Curve(rawValue: Int(bits ?? 256)) else { throw KeyFailure.param("EC keys are 256, 384 or 521 bits") }
            return try AsymmetricKey.generate(curve)
        case 42:
            return try AsymmetricKey.generateRSA(bits: Int(bits ?? 2048))
        default:
            throw KeyFailure.param("kSecAttrKeyType must be EC (kSecAttrKeyTypeECSECPrimeRandom) or RSA")
        }
    }

    static func importKey(type: Int64, isPrivate: Bool, _ bytes: UnsafeRawBufferPointer) throws -> AsymmetricKey {
        switch type {
        case 73: return try AsymmetricKey.ec(bytes, isPrivate: isPrivate)
        case 42: return try AsymmetricKey.rsa(bytes, isPrivate: isPrivate)
        default: throw KeyFailure.param("kSecAttrKeyType must be EC or RSA")
        }
    }

    /// Apple's `merge_params`: the per-key dictionary with the top level's other entries added,
    /// less the entries that only belong to the top level.
    static func merged(_ params: NSDictionary, _ subkey: String) -> NSMutableDictionary {
        let out = NSMutableDictionary()
        if let sub = params[subkey] as? NSDictionary { for (k, v) in sub { out.setObject(v, forKey: k as! AnyHashable) } }
        for (k, v) in params where out.object(forKey: k as! AnyHashable) == nil { out.setObject(v, forKey: k as! AnyHashable) }
        for k in ["private" as NSString, "public", kSecAttrKeyType, kSecAttrKeySizeInBits] { out.removeObject(forKey: k) }
        return out
    }
}
