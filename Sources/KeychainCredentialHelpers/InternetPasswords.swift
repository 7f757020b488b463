import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol

/// Internet-password items through the daemon, as Apple's SecItem calls see them: the daemon
/// decides the caller's access groups from its uid, as for any client.
final class InternetPasswords {
    private let client: DaemonClient

    init(client: DaemonClient) { self.client = client }

    /// Every matching item with its attributes and persistent reference, and its secret when
    /// `secrets`; empty when none matches.
    func find(_ query: Attributes, secrets: Bool = false, limit: Int? = nil) throws -> [FoundItem] {
        var q = query
        q[.class] = "inet"
        q[.returnAttributes] = true
        q[.returnPersistentRef] = true
        if secrets { q[.returnData] = true }
        q[.matchLimit] = limit.map { .number(Int64($0)) } ?? "m_LimitAll"
        do {
            let result = try client.send(Request(.copyMatching, query: q)).result
            if let one = result.value?.item { return [one] }
            return (result.array ?? []).compactMap(\.item)
        } catch KeychainStatus.itemNotFound {
            return []
        }
    }

    /// Replaces the secret and the other attributes given of the item with this primary key
    /// that a search finds first, in whichever of the caller's groups it lives (as
    /// `add-internet-password -U`), so the next `get` answers this secret; adds one (to the
    /// caller's first group) when there is none (SecItemUpdate, else SecItemAdd).
    func addOrUpdate(_ attributes: Attributes, primaryKey: Attributes, secret: SecureBytes) throws {
        var changes = attributes
        for key in primaryKey.keys { changes[key] = nil }
        if let ref = try find(primaryKey, limit: 1).first?.persistentRef {
            do {
                try client.send(Request(.update, query: [.class: "inet", .valuePersistentRef: .data(ref)], changes: changes,
                                        secrets: [secret]))
                return
            } catch KeychainStatus.itemNotFound {}  // deleted meanwhile: add it again
        }
        var add = attributes
        add[.class] = "inet"
        do {
            try client.send(Request(.add, query: add, secrets: [secret]))
        } catch KeychainStatus.duplicateItem {
            // Added by another client meanwhile.
            var query = primaryKey
            query[.class] = "inet"
            try client.send(Request(.update, query: query, changes: changes, secrets: [secret]))
        }
    }

    /// Deletes one item by its persistent reference; false when it was already gone.
    @discardableResult
    func delete(ref: [UInt8]) throws -> Bool {
        do {
            try client.send(Request(.delete, query: [.class: "inet", .valuePersistentRef: .data(ref)]))
            return true
        } catch KeychainStatus.itemNotFound {
            return false
        }
    }
}

extension AttributeValue {
    /// A text attribute as a string, whether stored as a string or as UTF-8 data.
    var text: String? {
        switch self {
        case .string(let s): return s
        case .data(let d): return String(decoding: d, as: UTF8.self)
        default: return nil
        }
    }

    /// A number attribute (a port), whether stored as a number or as digits.
    var integer: Int64? {
        switch self {
        case .number(let n): return n
        case .string(let s): return Int64(s)
        default: return nil
        }
    }
}
