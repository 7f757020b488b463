/// An item as the file interface names it: `/<service>/<account>` names a generic password,
/// `/.internet/<server>/<account>` an internet password (docs/filesystem.md, Layout).
public struct ItemName: Hashable, Sendable {
    /// The directory's value: `svce` of a generic password, `srvr` of an internet password.
    public var service: [UInt8]
    public var account: [UInt8]
    public let itemClass: ItemClass
    /// An internet password's other primary-key attributes (`FileNames.qualifierKeys`) that are
    /// not empty or zero; always empty for a generic password.
    public var qualifiers: Attributes
    /// The access group the name names, for an item that shares its name with an item in
    /// another group (`%~agrp=`, docs/filesystem.md); nil for the plain name, which shows the
    /// first such item the caller may read.
    public var group: String?
    /// The synchronizable value the name names, for an item that shares its name (and group)
    /// with one of the other value (`%~sync=`, docs/filesystem.md); nil for either.
    public var synchronizable: Bool?

    /// The name's bytes in two blocks rather than byte by byte (an array's own hashing), since
    /// the mount hashes a name for every lookup; equal names hash alike, as `==` compares every
    /// field and this hashes some.
    public func hash(into hasher: inout Hasher) {
        service.withUnsafeBytes { hasher.combine(bytes: $0) }
        hasher.combine(service.count)
        account.withUnsafeBytes { hasher.combine(bytes: $0) }
        hasher.combine(itemClass)
        hasher.combine(group)
        hasher.combine(synchronizable)
    }

    public init(service: [UInt8], account: [UInt8]) {
        self.service = service
        self.account = account
        itemClass = .genericPassword
        qualifiers = [:]
    }

    /// An internet password's name; empty and zero qualifiers are dropped, so that one item has one name.
    public init(server: [UInt8], account: [UInt8], qualifiers: Attributes = [:]) {
        service = server
        self.account = account
        itemClass = .internetPassword
        self.qualifiers = qualifiers.filter { FileNames.qualifierKeys.contains($0.key) && !FileNames.isDefault($0.value) }
    }

    /// A key's or certificate's name in its class directory (`/.keys`, `/.certificates`): its
    /// label, or for an item without one the attribute that tells it apart (`FileNames.flatQualifier`).
    public init(flat itemClass: ItemClass, label: [UInt8], qualifiers: Attributes = [:]) {
        service = []
        account = label
        self.itemClass = itemClass
        self.qualifiers = label.isEmpty ? qualifiers.filter { $0.key == FileNames.flatQualifier(itemClass) } : [:]
    }

    /// The name of the item with `attributes` of `itemClass`.
    public init(itemClass: ItemClass, attributes: Attributes) {
        let bytes = { (key: AttributeKey) in attributes[key]?.byteView ?? [] }
        if FileNames.isFlat(itemClass) {
            let q = FileNames.flatQualifier(itemClass)
            self.init(flat: itemClass, label: bytes(.label), qualifiers: [q: .data(bytes(q))])
        } else if itemClass == .internetPassword {
            self.init(server: bytes(.server), account: bytes(.account),
                      qualifiers: attributes.filter { FileNames.qualifierKeys.contains($0.key) })
        } else {
            self.init(service: bytes(.service), account: bytes(.account))
        }
    }

    /// The attribute that names the directory: `svce` or `srvr`.
    public var directoryAttribute: AttributeKey { itemClass == .internetPassword ? .server : .service }

    /// The whole primary key but the group (and the synchronizable value, when the name has
    /// none): missing qualifiers as empty, so that a search for the plain name finds only the
    /// item whose other attributes are all empty.
    public var attributes: Attributes {
        if FileNames.isFlat(itemClass) { return [.class: .string(itemClass.rawValue), .label: .data(account)].merging(qualifiers) { $1 } }
        var out: Attributes = [.class: .string(itemClass.rawValue), directoryAttribute: .data(service), .account: .data(account)]
        if itemClass == .internetPassword {
            for key in FileNames.qualifierKeys { out[key] = qualifiers[key] ?? AttributeKind.of(key).empty }
        }
        if let synchronizable { out[.synchronizable] = .number(synchronizable ? 1 : 0) }
        return out
    }

    /// `accessGroups` narrowed to the group the name names, if it names one.
    public func narrowing(_ accessGroups: [String]) -> [String] {
        guard let group else { return accessGroups }
        return accessGroups.filter { $0 == group }
    }

    /// Whether an item with `attributes` may be the one this name names: of its synchronizable
    /// value, when the name has one (the group is narrowed by `narrowing`).
    public func admits(_ attributes: Attributes) -> Bool {
        guard let synchronizable else { return true }
        return (attributes[.synchronizable]?.integerView == 1) == synchronizable
    }

    /// Whether this name of a key or certificate, a label with its qualifier (one that shares its
    /// label: `FileNames.flatFileName`), names the item with `attributes`.
    func namesFlat(labelled attributes: Attributes) -> Bool {
        let key = FileNames.flatQualifier(itemClass)
        guard FileNames.isFlat(itemClass), !account.isEmpty, let wanted = qualifiers[key]?.byteView else { return false }
        return attributes[.label]?.byteView == account && attributes[key]?.byteView == wanted
    }

    /// The synchronizable value to search for: the name's, else either.
    var synchronizableFilter: AttributeValue {
        synchronizable.map { .number($0 ? 1 : 0) } ?? .synchronizableAny
    }

    /// The same name without its group or synchronizable value: the plain name of the item.
    public var plain: ItemName {
        var out = self
        out.group = nil
        out.synchronizable = nil
        return out
    }

    /// Gives `attributes` (an item's) this name, for a rename.
    func apply(to attributes: inout Attributes) {
        for (key, value) in self.attributes where key != .class { attributes[key] = value }
    }
}

/// What one file operation did, for the caller's caches and change events.
public struct FileChange: Sendable {
    /// The item as it is now (for a rename over another item: that item, with its new secret).
    public var entry: FileEntry
    /// The access groups of the items the operation changed, before and after.
    public var groups: Set<String>
    /// True when the operation made a new item.
    public var created = false
    /// The item a rename replaced: it kept its reference and took the source's secret.
    public var replaced: PersistentRef?
}
