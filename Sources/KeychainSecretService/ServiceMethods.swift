import KeychainModel
import KeychainCrypto
import KeychainKeys

/// org.freedesktop.Secret.Service at /org/freedesktop/secrets.
extension SecretService {
    func serviceMethod(_ m: BusMessage) throws -> OutgoingMessage? {
        switch m.member {
        case "OpenSession": return try openSession(m)
        case "SearchItems":
            let (unlocked, locked) = try searchItems(group: nil, query: try m.stringDictionary())
            let r = try m.reply()
            try r.objectPaths(unlocked)
            try r.objectPaths(locked)
            return r
        case "GetSecrets": return try getSecrets(m)
        case "Unlock": return try unlock(m)
        case "Lock":
            let objects = try m.objectPaths()
            // A lock stops every consumer of every group: the owner's, root's, or granted (as on the socket).
            guard caller.mayLock else { throw BusError.accessDenied }
            try vaultCall { try vault.lock() }
            for group in caller.readable {
                emitPropertiesChanged(ObjectPath.collection(group: group).string, interface: Self.collectionInterface, group: group,
                                      ["Locked": .bool(true)])
            }
            let r = try m.reply()
            try r.objectPaths(objects)
            try r.objectPath(ObjectPath.none)
            return r
        case "ReadAlias":
            let name = try m.string()
            let groups = caller.readable
            let r = try m.reply()
            try r.objectPath(name == "default" && !groups.isEmpty ? ObjectPath.collection(group: groups[0]).string : ObjectPath.none)
            return r
        case "SetAlias":
            let name = try m.string()
            let target = try m.objectPath()
            let groups = caller.readable
            // The default is the caller's first access group, decided by the vault's group table.
            guard name == "default", let first = groups.first, target == ObjectPath.collection(group: first).string else {
                throw BusError.notSupported("aliases follow the access groups: default is the first group")
            }
            return try m.reply()
        case "CreateCollection":
            throw BusError.notSupported("collections are access groups: add one with keychainfs group add")
        default:
            return nil
        }
    }

    private func openSession(_ m: BusMessage) throws -> OutgoingMessage {
        let algorithm = try m.string()
        let r = try m.reply()
        switch algorithm {
        case "plain":
            try m.skip("v")
            let s = try sessions.open(owner: m.sender, uid: caller.uid, transport: PlainTransport())
            try r.open("v", "s"); try r.string(""); try r.close()
            try r.objectPath(s.path)
        case "dh-ietf1024-sha256-aes128-cbc-pkcs7":
            guard m.peekVariant() == "ay" else { throw BusError.invalidArgs("expected the client's public value (ay)") }
            _ = try m.enter("v", "ay")
            let peer = try m.bytes().withUnsafeBytes { Array($0) }
            try m.exit()
            guard let dh = try? DHAES128Session(peerPublic: peer) else { throw BusError.invalidArgs("not a public value of the group") }
            let s = try sessions.open(owner: m.sender, uid: caller.uid, transport: DHAESTransport(dh))
            try r.open("v", "ay"); try dh.publicKey.withUnsafeBytes { try r.bytes($0) }; try r.close()
            try r.objectPath(s.path)
        default:
            throw BusError(name: "org.freedesktop.DBus.Error.NotSupported", message: "unsupported session algorithm \(algorithm)")
        }
        return r
    }

    /// Items matching `query` in `group` (every group when nil), split into unlocked and locked.
    /// The daemon finds the items holding every pair by their blind tokens (it computes them);
    /// the match is checked again here on the attributes it returns.
    func searchItems(group: String?, query: [String: String]) throws -> (unlocked: [String], locked: [String]) {
        let found = try vaultCall { try vault.search(group: group, pairs: query) }
        var unlocked: [String] = []
        for item in found where SecretAttributes.matches(SecretAttributes.of(item.attributes), query) {
            guard let ref = item.persistentRef, let g = item.attributes[.accessGroup]?.stringValue, caller.readable.contains(g) else { continue }
            unlocked.append(ObjectPath.item(group: g, ref: ref).string)
        }
        // Items the vault cannot read now cannot be matched: their attributes are encrypted
        // with their class key. The daemon says so only when nothing readable matched.
        return (unlocked, [])
    }

    private func getSecrets(_ m: BusMessage) throws -> OutgoingMessage {
        let items = try m.objectPaths()
        let session = try sessions.session(at: try m.objectPath(), for: m.sender)
        let r = try m.reply()
        r.markSensitive()
        try r.open("a", "{o(oayays)}")
        for path in items {
            guard case .item(let group, let ref)? = ObjectPath(path), caller.readable.contains(group),
                  let item = try? vault.item(ref: ref, group: group, secret: true), let secret = item.secret else { continue }
            try r.open("e", "o(oayays)")
            try r.objectPath(path)
            try appendSecret(secret, of: item, session: session, to: r)
            try r.close()
        }
        try r.close()
        return r
    }

    /// Appends a `Secret` struct (oayays) carrying an item's secret in `session`.
    func appendSecret(_ secret: SecureBytes, of item: FoundItem, session: SecretSession, to r: OutgoingMessage) throws {
        try r.open("r", "oayays")
        try r.objectPath(session.path)
        try session.transport.append(secret, to: r)
        try r.string(SecretAttributes.contentType(of: item.attributes))
        try r.close()
    }

    private func unlock(_ m: BusMessage) throws -> OutgoingMessage {
        let objects = try m.objectPaths()
        let locked = try vaultCall { try vault.state().locked }
        let r = try m.reply()
        guard locked else {
            try r.objectPaths(objects)
            try r.objectPath(ObjectPath.none)
            return r
        }
        // Items of classes readable while locked (AfterFirstUnlock, Always) are unlocked already.
        let readable = objects.filter { path in
            guard case .item(let g, let ref)? = ObjectPath(path), caller.readable.contains(g),
                  let item = try? vault.item(ref: ref, group: g) else { return false }
            return !isLocked(item, vaultLocked: true)
        }
        try r.objectPaths(readable)
        try r.objectPath(readable.count == objects.count ? ObjectPath.none : try prompts.open(.unlock(objects), owner: m.sender).string)
        return r
    }

    /// Whether an item's secret is out of reach now: its class needs an unlocked vault.
    func isLocked(_ item: FoundItem, vaultLocked: Bool) -> Bool {
        guard vaultLocked else { return false }
        let p = item.attributes[.accessible]?.stringValue.flatMap(ProtectionClass.init(rawValue:)) ?? .default
        return p.availability == .whileUnlocked
    }
}
