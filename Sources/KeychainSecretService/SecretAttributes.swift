import KeychainCore
import KeychainCrypto

/// How a Secret Service item and a generic password map onto each other (docs/secret-service.md).
///
/// An item made over D-Bus: `svce` is its `service` attribute (else empty), `acct` its `username`,
/// else its `account`, else a generated `ss-` and 16 hex digits; `labl` is its label; every
/// attribute and the secret's content type are in `gena`, encoded by `encode`, so they are
/// encrypted with the item. An item made elsewhere (CLI, mount, SecItem) has no such `gena`: its
/// attributes are `service` = svce, `account` = `username` = acct.
enum SecretAttributes {
    static let magic: [UInt8] = Array("kcss".utf8)
    static let version: UInt8 = 1

    /// The Secret Service attributes of a vault item.
    static func of(_ item: Attributes) -> [String: String] {
        if let blob = item[.generic].flatMap(bytes), let decoded = decode(blob) { return decoded.attributes }
        let svce = item[.service].flatMap(text) ?? ""
        let acct = item[.account].flatMap(text) ?? ""
        return ["service": svce, "account": acct, "username": acct]
    }

    /// The secret's content type as stored, else text/plain.
    static func contentType(of item: Attributes) -> String {
        item[.generic].flatMap(bytes).flatMap(decode)?.contentType ?? "text/plain"
    }

    /// The service and account an item made over D-Bus gets.
    static func primaryKey(for attributes: [String: String]) throws -> (service: String, account: String) {
        if let named = attributes["username"] ?? attributes["account"] { return (attributes["service"] ?? "", named) }
        return (attributes["service"] ?? "", "ss-" + Hex.encode(try randomBytes(8)))
    }

    static func randomBytes(_ n: Int) throws -> [UInt8] {
        let r = try mapAllocationFailure { try SecureBytes.random(count: n) }
        return r.withUnsafeBytes { Array($0) }
    }

    /// True when `query` is a subset of `attributes`, as the specification's searches match.
    static func matches(_ attributes: [String: String], _ query: [String: String]) -> Bool {
        query.allSatisfy { attributes[$0.key] == $0.value }
    }

    /// `kcss`, version 1, content type, then u32 count and the pairs sorted by name, each string
    /// as u32 length + UTF-8.
    static func encode(_ attributes: [String: String], contentType: String) -> [UInt8] {
        var w = ByteWriter()
        w.raw(magic)
        w.u8(version)
        w.lengthPrefixed(Array(contentType.utf8))
        w.u32(UInt32(attributes.count))
        for (k, v) in attributes.sorted(by: { $0.key < $1.key }) {
            w.lengthPrefixed(Array(k.utf8))
            w.lengthPrefixed(Array(v.utf8))
        }
        return w.bytes
    }

    static func decode(_ blob: [UInt8]) -> (attributes: [String: String], contentType: String)? {
        blob.withUnsafeBytes { buf -> ([String: String], String)? in
            var r = ByteReader(buf)
            guard (try? r.raw(4)) == magic, (try? r.u8()) == version,
                  let type = try? r.lengthPrefixed(), let count = try? r.u32(), Int(count) <= r.remaining else { return nil }
            var out: [String: String] = [:]
            for _ in 0..<count {
                guard let k = try? r.lengthPrefixed(), let v = try? r.lengthPrefixed() else { return nil }
                out[String(decoding: k, as: UTF8.self)] = String(decoding: v, as: UTF8.self)
            }
            return (out, String(decoding: type, as: UTF8.self))
        }
    }

    static func bytes(_ v: AttributeValue) -> [UInt8]? {
        switch v {
        case .data(let d): return d
        case .string(let s): return Array(s.utf8)
        default: return nil
        }
    }

    static func text(_ v: AttributeValue) -> String? { bytes(v).map { String(decoding: $0, as: UTF8.self) } }
}
