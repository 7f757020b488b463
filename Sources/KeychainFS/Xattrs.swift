import CFuse
import Glibc
import KeychainCore

/// Item attributes as extended attributes `user.keychain.<name>`; reading them never decrypts
/// a secret. Writable: label, comment, description, accessible, access-group.
extension MountServer {
    static let prefix = "user.keychain."

    /// xattr name -> (attribute key, nil for the item's version; writable).
    static let xattrs: [(String, AttributeKey?, Bool)] = [
        ("class", .class, false), ("accessible", .accessible, true), ("access-group", .accessGroup, true),
        ("label", .label, true), ("comment", .comment, true), ("description", .description, true),
        ("created", .creationDate, false), ("modified", .modificationDate, false), ("synchronizable", .synchronizable, false),
        ("version", nil, false),
        // Internet passwords' primary key, where the item has them.
        ("server", .server, false), ("protocol", .protocol, false), ("port", .port, false), ("path", .path, false),
        ("authentication-type", .authenticationType, false), ("security-domain", .securityDomain, false),
    ]

    func xattrValue(_ e: FileEntry, key: AttributeKey?) -> [UInt8]? {
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

    /// The item with all its attributes: a search, since cached entries keep only a few.
    func itemEntry(_ ino: UInt64) throws -> FileEntry? {
        guard case .item(let n)? = inodes.node(ino) else { return nil }
        return try vault.fileEntries(named: n, accessGroups: visibleGroups, limit: 1).first
    }

    func getxattr(_ req: FuseRequest, ino: UInt64, name: String, size: Int) {
        guard name.hasPrefix(Self.prefix), let spec = Self.xattrs.first(where: { Self.prefix + $0.0 == name }) else {
            return req.error(ENODATA)
        }
        do {
            guard let e = try itemEntry(ino) else { return req.error(inodes.node(ino) == nil ? ENOENT : ENODATA) }
            guard let value = xattrValue(e, key: spec.1) else { return req.error(ENODATA) }
            if size == 0 { return req.xattrSize(value.count) }
            guard size >= value.count else { return req.error(ERANGE) }
            req.buffer(value)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func listxattr(_ req: FuseRequest, ino: UInt64, size: Int) {
        do {
            guard let e = try itemEntry(ino) else {
                return inodes.node(ino) == nil ? req.error(ENOENT) : (size == 0 ? req.xattrSize(0) : req.buffer([]))
            }
            var out: [UInt8] = []
            for (name, key, _) in Self.xattrs where xattrValue(e, key: key) != nil {
                out += Array((Self.prefix + name).utf8) + [0]
            }
            if size == 0 { return req.xattrSize(out.count) }
            guard size >= out.count else { return req.error(ERANGE) }
            req.buffer(out)
        } catch {
            req.error(errnoFor(error))
        }
    }

    func setxattr(_ req: FuseRequest, ino: UInt64, name: String, value: [UInt8]) {
        guard !options.readOnly else { return req.error(EROFS) }
        guard name.hasPrefix(Self.prefix), let spec = Self.xattrs.first(where: { Self.prefix + $0.0 == name }) else {
            return req.error(ENOTSUP)
        }
        guard spec.2 else { return req.error(EPERM) }
        do {
            guard let e = try itemEntry(ino) else { return req.error(ENOENT) }
            guard !FileNames.isFlat(e.itemClass) else { return req.error(EPERM) }  // PEM files are read-only
            let text = String(decoding: value, as: UTF8.self)
            var change: AttributeValue = .string(text)
            guard let key = spec.1 else { return req.error(EPERM) }
            if key == .accessible {
                guard let p = ProtectionClass(name: text) else { return req.error(EINVAL) }
                change = .string(p.rawValue)
            }
            let touched = try vault.update([.valuePersistentRef: .data(e.ref.bytes), .synchronizable: .synchronizableAny], changes: [key: change],
                             accessGroups: caller(req, writing: true).groups)
            if case .item(let n)? = inodes.node(ino) { changed(.update, n, groups: touched) }
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }

    func removexattr(_ req: FuseRequest, name: String) {
        req.error(name.hasPrefix(Self.prefix) ? EPERM : ENODATA)
    }
}
