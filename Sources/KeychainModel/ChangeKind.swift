/// What a change did, as `keychainfs watch` prints it (`event`) and a mount's `on_change`
/// command receives it (`KEYCHAINFS_EVENT`): the raw values are part of that interface.
public enum ChangeKind: String, Sendable {
    /// An item was made.
    case add
    /// An item's secret or attributes changed, or it was renamed.
    case update
    /// An item was deleted.
    case delete
    /// The vault was locked: the classes that need the passphrase are gone.
    case lock
    /// The vault was unlocked.
    case unlock

    /// Lock and unlock concern the vault, not an item.
    public var concernsItems: Bool { self != .lock && self != .unlock }
}
