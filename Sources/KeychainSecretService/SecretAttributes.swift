import KeychainModel
import KeychainCrypto

/// How a Secret Service item and a generic password map onto each other (docs/secret-service.md).
///
/// An item made over D-Bus: `svce` is its `service` attribute (else empty), `acct` its `username`,
/// else its `account`, else a generated `ss-` and 16 hex digits; `labl` is its label; every
/// attribute and the secret's content type are in `gena`, encoded by `encode`, so they are
/// encrypted with the item. An item made elsewhere (CLI, mount, SecItem) has no such `gena`: its
/// attributes are `service` = svce, `account` = `username` = acct.
enum SecretAttributes {
    /// The Secret Service attributes of a vault item.
    static func of(_ item: Attributes) -> [String: String] { SecretServicePairs.of(item) }

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

    static func matches(_ attributes: [String: String], _ query: [String: String]) -> Bool {
        SecretServicePairs.matches(attributes, query)
    }

    static func encode(_ attributes: [String: String], contentType: String) -> [UInt8] {
        SecretServicePairs.encode(attributes, contentType: contentType)
    }

    static func decode(_ blob: [UInt8]) -> (attributes: [String: String], contentType: String)? {
        SecretServicePairs.decode(blob)
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
