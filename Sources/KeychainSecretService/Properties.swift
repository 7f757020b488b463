import KeychainModel

/// A property value, written as a variant.
enum PropertyValue {
    case string(String), bool(Bool), uint64(UInt64), paths([String]), dictionary([String: String])

    func appendVariant(to m: OutgoingMessage) throws {
        switch self {
        case .string(let s): try m.open("v", "s"); try m.string(s)
        case .bool(let b): try m.open("v", "b"); try m.bool(b)
        case .uint64(let n): try m.open("v", "t"); try m.uint64(n)
        case .paths(let p): try m.open("v", "ao"); try m.objectPaths(p)
        case .dictionary(let d): try m.open("v", "a{ss}"); try m.stringDictionary(d)
        }
        try m.close()
    }
}

/// org.freedesktop.DBus.Properties (Get, GetAll, Set) on every object, and PropertiesChanged.
extension SecretService {
    func properties(_ m: BusMessage, _ object: ObjectPath) throws -> OutgoingMessage? {
        let interface = try m.string()
        switch m.member {
        case "Get":
            let name = try m.string()
            guard let value = try propertyValues(of: object, interface: interface)[name] else {
                throw BusError.invalidArgs("no property \(name)")
            }
            let r = try m.reply()
            try value.appendVariant(to: r)
            return r
        case "GetAll":
            let r = try m.reply()
            try r.open("a", "{sv}")
            for (name, value) in try propertyValues(of: object, interface: interface).sorted(by: { $0.key < $1.key }) {
                try r.open("e", "sv"); try r.string(name); try value.appendVariant(to: r); try r.close()
            }
            try r.close()
            return r
        case "Set":
            try setProperty(m, object, name: try m.string())
            return try m.reply()
        default:
            return nil
        }
    }

    /// The properties of an object for `interface` (empty: the object's own interface).
    private func propertyValues(of object: ObjectPath, interface: String) throws -> [String: PropertyValue] {
        let own: String
        switch object {
        case .service: own = Self.serviceInterface
        case .collection, .defaultAlias: own = Self.collectionInterface
        case .item: own = Self.itemInterface
        case .session, .prompt: return [:]
        }
        if case .service = object, interface == Self.providerInterface {
            // What the provider has done since it started, for measuring (never with GetAll of "").
            return ["VaultComparisons": .uint64(UInt64(vaultComparisons)), "DaemonRequests": .uint64(UInt64(vault.requests))]
        }
        guard interface.isEmpty || interface == own else { return [:] }
        switch object {
        case .service:
            let groups = caller.readable
            return ["Collections": .paths(groups.map { ObjectPath.collection(group: $0).string })]
        case .collection, .defaultAlias:
            let group = try group(of: object)
            let locked = try vaultCall { try vault.state().locked }
            // While locked, the items the vault can still read (AfterFirstUnlock, Always).
            let items = (try? searchItems(group: group, query: [:]).unlocked) ?? []
            return ["Items": .paths(items), "Label": .string(group), "Locked": .bool(locked),
                    "Created": .uint64(0), "Modified": .uint64(0)]
        case .item(let group, let ref):
            let item = try existing(object.string, group: group, ref: ref)
            let locked = try vaultCall { try vault.state().locked }
            return ["Locked": .bool(isLocked(item, vaultLocked: locked)),
                    "Attributes": .dictionary(SecretAttributes.of(item.attributes)),
                    "Label": .string(item.attributes[.label].flatMap(SecretAttributes.text) ?? ""),
                    "Created": .uint64(Self.unixTime(item.attributes[.creationDate])),
                    "Modified": .uint64(Self.unixTime(item.attributes[.modificationDate]))]
        default:
            return [:]
        }
    }

    /// Seconds since 1970 from Apple's absolute time (seconds since 2001).
    static func unixTime(_ v: AttributeValue?) -> UInt64 {
        guard case .date(let d)? = v else { return 0 }
        return UInt64(max(0, d + 978_307_200))
    }

    /// Set: an item's Label and Attributes (its service and account stay as they were made).
    private func setProperty(_ m: BusMessage, _ object: ObjectPath, name: String) throws {
        guard case .item(let group, let ref) = object else { throw BusError.notSupported("only an item's Label and Attributes can be set") }
        try authorizeWriting(group)
        let item = try existing(object.string, group: group, ref: ref)
        var changes: Attributes = [:]
        var changed: [String: PropertyValue] = [:]
        switch (name, m.peekVariant()) {
        case ("Label", "s"?):
            _ = try m.enter("v", "s")
            let label = try m.string()
            changes[.label] = .string(label)
            changed["Label"] = .string(label)
        case ("Attributes", "a{ss}"?):
            _ = try m.enter("v", "a{ss}")
            let attributes = try m.stringDictionary()
            changes[.generic] = .data(SecretAttributes.encode(attributes, contentType: SecretAttributes.contentType(of: item.attributes)))
            changed["Attributes"] = .dictionary(attributes)
        default:
            throw BusError.invalidArgs("only an item's Label (s) and Attributes (a{ss}) can be set")
        }
        try m.exit()
        try vaultCall { try vault.update(ref: ref, changes: changes, secret: nil) }
        emitPropertiesChanged(object.string, interface: Self.itemInterface, group: group, changed)
        emit("ItemChanged", from: ObjectPath.collection(group: group).string, item: object.string)
    }

    /// Emits org.freedesktop.DBus.Properties.PropertiesChanged after the current reply, to the
    /// connections that may read `group` (the object's access group).
    func emitPropertiesChanged(_ path: String, interface: String, group: String, _ changed: [String: PropertyValue]) {
        signal("PropertiesChanged", interface: Self.propertiesInterface, path: path, group: group, afterReply: true) { s in
            try s.string(interface)
            try s.open("a", "{sv}")
            for (name, value) in changed {
                try s.open("e", "sv"); try s.string(name); try value.appendVariant(to: s); try s.close()
            }
            try s.close()
            try s.open("a", "s"); try s.close()
        }
    }
}
