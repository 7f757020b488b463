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
    /// The access-group table changed (`group add`, `set`, `remove`, a restore): who may reach
    /// which group may differ from the next request on.
    case groups

    /// Lock, unlock and a change of the group table concern the vault, not an item.
    public var concernsItems: Bool { self != .lock && self != .unlock && self != .groups }
}
