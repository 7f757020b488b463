import KeychainModel
import KeychainCrypto

/// org.freedesktop.Secret.Item: one generic password.
extension SecretService {
    func itemMethod(_ m: BusMessage, group: String, ref: [UInt8]) throws -> OutgoingMessage? {
        let path = ObjectPath.item(group: group, ref: ref).string
        let collection = ObjectPath.collection(group: group).string
        switch m.member {
        case "GetSecret":
            let session = try sessions.session(at: try m.objectPath(), for: m.sender)
            guard let item = try vaultCall({ try vault.item(ref: ref, group: group, secret: true) }), let secret = item.secret else {
                throw BusError.unknownObject(path)
            }
            let r = try m.reply()
            r.markSensitive()
            try appendSecret(secret, of: item, session: session, to: r)
            return r
        case "SetSecret":
            try authorizeWriting(group)
            let (secret, contentType) = try readSecret(m)
            let item = try existing(path, group: group, ref: ref)
            var changes: Attributes = [:]
            if let blob = item.attributes[.generic].flatMap(SecretAttributes.bytes), let decoded = SecretAttributes.decode(blob),
               decoded.contentType != contentType {
                changes[.generic] = .data(SecretAttributes.encode(decoded.attributes, contentType: contentType))
            }
            try vaultCall { try vault.update(ref: ref, changes: changes, secret: secret) }
            emit("ItemChanged", from: collection, item: path)
            return try m.reply()
        case "Delete":
            try authorizeWriting(group)
            _ = try existing(path, group: group, ref: ref)
            try vaultCall { try vault.delete(ref: ref) }
            emit("ItemDeleted", from: collection, item: path)
            let r = try m.reply()
            try r.objectPath(ObjectPath.none)
            return r
        default:
            return nil
        }
    }

    /// The item at `path` with its attributes. - Throws: NoSuchObject when it is gone.
    func existing(_ path: String, group: String, ref: [UInt8]) throws -> FoundItem {
        guard let item = try vaultCall({ try vault.item(ref: ref, group: group) }) else { throw BusError.unknownObject(path) }
        return item
    }
}
