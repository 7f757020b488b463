/// The Secret Service attributes (string to string) of a generic password, as both the provider
/// and the vault read them (docs/secret-service.md). An item made over D-Bus keeps them in `gena`:
/// `kcss`, version 1, the content type, a u32 count and the pairs sorted by name, each string a
/// u32 length and UTF-8. Any other item's are `service` = svce, `account` = `username` = acct.
public enum SecretServicePairs {
    public static let magic: [UInt8] = Array("kcss".utf8)
    public static let version: UInt8 = 1

    /// The Secret Service attributes of a generic password's attributes.
    public static func of(_ item: Attributes) -> [String: String] {
        if let blob = item[.generic]?.byteView, let decoded = decode(blob) { return decoded.attributes }
        let svce = item[.service]?.byteView.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let acct = item[.account]?.byteView.map { String(decoding: $0, as: UTF8.self) } ?? ""
        return ["service": svce, "account": acct, "username": acct]
    }

    /// True when `query` is a subset of `attributes`, as the specification's searches match.
    public static func matches(_ attributes: [String: String], _ query: [String: String]) -> Bool {
        query.allSatisfy { attributes[$0.key] == $0.value }
    }

    public static func encode(_ attributes: [String: String], contentType: String) -> [UInt8] {
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

    public static func decode(_ blob: [UInt8]) -> (attributes: [String: String], contentType: String)? {
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
}
