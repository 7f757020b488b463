import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainProtocol

/// A change worth telling `keychainfs watch` and `on_change` commands about.
struct ChangeEvent: Sendable {
    var kind: ChangeKind
    var service: String?
    var account: String?
    var time = Int(Glibc.time(nil))
    /// The names, as stored bytes, whose files the change may have made, changed or removed:
    /// before and after a rename. Nil when the change names no service (drop every name).
    var touched: [(service: [UInt8], account: [UInt8]?)]?
    /// The access groups of the items the change concerns (before and after a move). Nil when
    /// unknown: then only administrators learn of it with names, no filtered watcher of another
    /// user matches it, and no view's `on_change` runs for it.
    var groups: [String]?

    /// The service and account named by a request's query (and, for an update, its changes).
    init(kind: ChangeKind, query: Attributes = [:], changes: Attributes = [:], groups: [String]? = nil) {
        self.kind = kind
        self.groups = groups
        service = Self.text(changes[.service] ?? query[.service])
        account = Self.text(changes[.account] ?? query[.account])
        if let s = Self.bytes(query[.service]) {
            let a = Self.bytes(query[.account])
            touched = [(s, a)]
            if changes[.service] != nil || changes[.account] != nil {
                touched!.append((Self.bytes(changes[.service]) ?? s, Self.bytes(changes[.account]) ?? a))
            }
        }
    }

    /// A change made through a mount; `previous` is the name it had before a rename.
    init(kind: ChangeKind, service: [UInt8]?, account: [UInt8]?, previous: (service: [UInt8], account: [UInt8]?)? = nil,
         groups: [String]? = nil) {
        self.kind = kind
        self.groups = groups
        self.service = service.map { String(decoding: $0, as: UTF8.self) }
        self.account = account.map { String(decoding: $0, as: UTF8.self) }
        if let service { touched = [(service, account)] + (previous.map { [$0] } ?? []) }
    }

    /// Names a change whose query named no service (one by persistent reference, or a broad
    /// one) after the items it changed: the service (and account) they share, and each one's
    /// names before and after. Left as it is when an item has no service (drop every name).
    mutating func name(_ items: [ChangedItemName]) {
        guard !items.isEmpty, items.allSatisfy({ Self.bytes($0.service) != nil && Self.bytes($0.previousService) != nil }) else { return }
        let services = Set(items.compactMap { Self.text($0.service) })
        service = services.count == 1 ? services.first : nil
        let accounts = Set(items.map { Self.text($0.account) })
        account = service != nil && accounts.count == 1 ? accounts.first ?? nil : nil
        touched = items.flatMap { item -> [(service: [UInt8], account: [UInt8]?)] in
            let now = (service: Self.bytes(item.service)!, account: Self.bytes(item.account))
            let before = (service: Self.bytes(item.previousService)!, account: Self.bytes(item.previousAccount))
            return now.service == before.service && now.account == before.account ? [now] : [now, before]
        }
    }

    /// Lock and unlock concern the vault, not an item: everyone who may watch learns of them.
    var concernsItems: Bool { kind.concernsItems }

    static func text(_ v: AttributeValue?) -> String? {
        switch v {
        case .string(let s)?: return s
        case .data(let d)?: return String(decoding: d, as: UTF8.self)
        default: return nil
        }
    }

    static func bytes(_ v: AttributeValue?) -> [UInt8]? {
        switch v {
        case .string(let s)?: return Array(s.utf8)
        case .data(let d)?: return d
        default: return nil
        }
    }

    /// Whether a caller entitled to `entitled` may learn of this change: always for the vault's
    /// own events; for an item's, only when one of its groups is the caller's. A change of
    /// unknown groups reaches only callers who may not filter by name (`filtered` false).
    func isVisible(toGroups entitled: [String], filtered: Bool) -> Bool {
        guard concernsItems else { return true }
        guard let groups else { return !filtered }
        return groups.contains(where: entitled.contains)
    }

    /// What a watcher sees: names only for administrators, whose view is the whole vault.
    func watchEvent(withNames: Bool) -> WatchEvent {
        WatchEvent(kind: kind.rawValue, time: Int64(time), service: withNames ? service : nil, account: withNames ? account : nil)
    }
}
