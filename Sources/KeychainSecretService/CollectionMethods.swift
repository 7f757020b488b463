import KeychainModel
import KeychainCrypto

/// org.freedesktop.Secret.Collection: one access group.
extension SecretService {
    func collectionMethod(_ m: BusMessage, group: String) throws -> OutgoingMessage? {
        switch m.member {
        case "SearchItems":
            let (unlocked, _) = try searchItems(group: group, query: try m.stringDictionary())
            let r = try m.reply()
            try r.objectPaths(unlocked)
            return r
        case "CreateItem": return try createItem(m, group: group)
        case "Delete":
            throw BusError.notSupported("collections are access groups: remove one with keychainfs group remove")
        default:
            return nil
        }
    }

    /// The properties, secret and `replace` of a CreateItem call.
    private struct NewItem {
        var label = ""
        var attributes: [String: String] = [:]
        var secret: SecureBytes
        var contentType: String
        var replace: Bool
    }

    private func readNewItem(_ m: BusMessage) throws -> NewItem {
        var label = "", attributes: [String: String] = [:]
        if try m.enter("a", "{sv}") {
            while try m.enter("e", "sv") {
                let name = try m.string()
                switch (name, m.peekVariant()) {
                case ("org.freedesktop.Secret.Item.Label", "s"?):
                    _ = try m.enter("v", "s"); label = try m.string(); try m.exit()
                case ("org.freedesktop.Secret.Item.Attributes", "a{ss}"?):
                    _ = try m.enter("v", "a{ss}"); attributes = try m.stringDictionary(); try m.exit()
                default:
                    try m.skip("v")
                }
                try m.exit()
            }
            try m.exit()
        }
        let (secret, contentType) = try readSecret(m)
        return NewItem(label: label, attributes: attributes, secret: secret, contentType: contentType, replace: try m.bool())
    }

    /// Reads a `Secret` struct (oayays) and opens it with its session.
    func readSecret(_ m: BusMessage) throws -> (SecureBytes, String) {
        m.markSensitive()
        guard try m.enter("r", "oayays") else { throw BusError.invalidArgs("expected a secret") }
        let session = try sessions.session(at: try m.objectPath(), for: m.sender)
        let parameters = try m.bytes()
        let value = try m.bytes()
        let contentType = try m.string()
        try m.exit()
        return (try session.transport.open(parameters: parameters, value: value), contentType)
    }

    /// CreateItem: with `replace`, an item of the same attributes, else of the same service and
    /// account, is changed in place; otherwise a new generic password is added (its account gets
    /// `#` and six hex digits when another item already has that service and account).
    private func createItem(_ m: BusMessage, group: String) throws -> OutgoingMessage {
        try authorizeWriting(group)
        let new = try readNewItem(m)
        let collection = ObjectPath.collection(group: group).string
        let gena = AttributeValue.data(SecretAttributes.encode(new.attributes, contentType: new.contentType))
        let (service, account) = try SecretAttributes.primaryKey(for: new.attributes)
        let existing = new.replace ? try vaultCall { try vault.search(group: group, service: service) } : []
        let same = existing.first { SecretAttributes.of($0.attributes) == new.attributes }
            ?? existing.first { $0.attributes[.account].flatMap(SecretAttributes.text) == account }
        let ref: [UInt8]
        if let same, let sameRef = same.persistentRef {
            try vaultCall { try vault.update(ref: sameRef, changes: [.label: .string(new.label), .generic: gena], secret: new.secret) }
            ref = sameRef
            emit("ItemChanged", from: collection, item: ObjectPath.item(group: group, ref: ref).string)
        } else {
            var attributes: Attributes = [.accessGroup: .string(group), .service: .string(service), .account: .string(account),
                                          .label: .string(new.label), .generic: gena]
            ref = try vaultCall {
                do {
                    return try vault.add(attributes, secret: new.secret)
                } catch KeychainStatus.duplicateItem {
                    attributes[.account] = .string(account + "#" + Hex.encode(try SecretAttributes.randomBytes(3)))
                    return try vault.add(attributes, secret: new.secret)
                }
            }
            emit("ItemCreated", from: collection, item: ObjectPath.item(group: group, ref: ref).string)
        }
        let r = try m.reply()
        try r.objectPath(ObjectPath.item(group: group, ref: ref).string)
        try r.objectPath(ObjectPath.none)
        return r
    }
}
