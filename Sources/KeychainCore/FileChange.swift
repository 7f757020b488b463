/// An item as the file interface names it: `/<service>/<account>` names a generic password.
/// The class is part of the name so that other classes' directories can name theirs later.
public struct ItemName: Hashable, Sendable {
    public var service: [UInt8]
    public var account: [UInt8]
    public let itemClass: ItemClass

    public init(service: [UInt8], account: [UInt8]) {
        self.service = service
        self.account = account
        itemClass = .genericPassword
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
