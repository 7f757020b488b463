import KeychainCore

/// One extended attribute `user.keychain.<name>` of an item file; reading it never decrypts a
/// secret.
struct XattrSpec {
    let name: String
    /// The attribute it shows; nil for the item's version.
    let key: AttributeKey?
    /// Writable through setxattr: label, comment, description, accessible, access-group.
    let writable: Bool
}

extension MountServer {
    static let xattrPrefix = "user.keychain."

    static let xattrs: [XattrSpec] = [
        XattrSpec(name: "class", key: .class, writable: false), XattrSpec(name: "accessible", key: .accessible, writable: true),
        XattrSpec(name: "access-group", key: .accessGroup, writable: true), XattrSpec(name: "label", key: .label, writable: true),
        XattrSpec(name: "comment", key: .comment, writable: true), XattrSpec(name: "description", key: .description, writable: true),
        XattrSpec(name: "created", key: .creationDate, writable: false), XattrSpec(name: "modified", key: .modificationDate, writable: false),
        XattrSpec(name: "synchronizable", key: .synchronizable, writable: false), XattrSpec(name: "version", key: nil, writable: false),
        // Internet passwords' primary key, where the item has them.
        XattrSpec(name: "server", key: .server, writable: false), XattrSpec(name: "protocol", key: .protocol, writable: false),
        XattrSpec(name: "port", key: .port, writable: false), XattrSpec(name: "path", key: .path, writable: false),
        XattrSpec(name: "authentication-type", key: .authenticationType, writable: false),
        XattrSpec(name: "security-domain", key: .securityDomain, writable: false),
    ]

    /// Whether a name is in the one namespace the mount serves (`user.`); the others are
    /// unsupported (EOPNOTSUPP), not merely absent.
    static func isSupportedXattrNamespace(_ name: String) -> Bool { name.hasPrefix("user.") }

    /// The attribute a full xattr name stands for; nil for any name outside `user.keychain.`.
    static func xattrSpec(_ name: String) -> XattrSpec? {
        guard name.hasPrefix(xattrPrefix) else { return nil }
        return xattrs.first { xattrPrefix + $0.name == name }
    }

    static func xattrValue(_ e: FileEntry, key: AttributeKey?) -> [UInt8]? {
        switch key {
        case .class?: return Array(e.itemClass.rawValue.utf8)
        case nil: return Array(String(e.version).utf8)
        case let key?:
            guard let v = e.attributes[key] else { return nil }
            switch v {
            case .string(let s): return Array(s.utf8)
            case .data(let d): return d
            case .number(let n): return Array(String(n).utf8)
            case .bool(let b): return Array((b ? "1" : "0").utf8)
            case .date(let t): return ISOTime.string(absolute: t).map { Array($0.utf8) }  // 2026-12-02T03:00:00Z
            }
        }
    }
}
