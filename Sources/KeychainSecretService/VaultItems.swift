import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol
import KeychainfsAccess

/// The vault's generic passwords as the Secret Service sees them, through the daemon's socket:
/// the daemon applies its rights to this process's uid, as for any other client.
final class VaultItems {
    private let connect: () throws -> DaemonClient
    private var client: DaemonClient?

    /// Requests sent so far (a ping after a failed write and a resend count once).
    private(set) var requests = 0

    init(connect: @escaping () throws -> DaemonClient) { self.connect = connect }

    /// Sends one request, connecting again once if the daemon went away (it restarts on demand).
    @discardableResult
    func send(_ request: Request) throws -> Response {
        requests += 1
        if client == nil { client = try connect() }
        do {
            return try client!.send(request)
        } catch KeychainStatus.notAvailable {
            client = try connect()
            return try client!.send(request)
        } catch KeychainStatus.io where (try? client!.send(Request(.ping))) == nil {
            // The request could not be written: the daemon closed the connection (it stopped)
            // before this request, which it never got. A daemon's own io status keeps the ping working.
            client = try connect()
            return try client!.send(request)
        }
    }

    /// The vault's lock state and this process's entitled groups, in order (the daemon's `info`).
    func state() throws -> (locked: Bool, groups: [String]) {
        let status = try VaultStatus(decoding: send(BareRequest(.info).request))
        return (!status.isUnlocked, status.groups)
    }

    /// The vault's owner, the uid its daemon runs as: the owner of the vault file (or of the
    /// socket given by `KEYCHAINFS_SOCKET`), asked once.
    func owner() throws -> UInt32 {
        if let known = knownOwner { return known }
        if client == nil { client = try connect() }
        let uid = Paths.vaultOwner(client!.vaultPath)
        knownOwner = uid
        return uid
    }
    private var knownOwner: UInt32?

    /// The access groups the daemon lists to this process (every group for the vault's owner).
    func groupTable() throws -> [AccessGroup] {
        let listed = try send(Request(.groupList)).result.array ?? []
        return listed.compactMap { $0.item.flatMap { AccessGroup(record: $0.attributes.fields) } }
    }

    /// Every readable generic password of `group` (all groups when nil) with its attributes and
    /// persistent reference, narrowed by `svce` (and `acct`) when given and to the items holding
    /// every Secret Service pair of `pairs` (the daemon's blind tokens).
    /// - Throws: `KeychainStatus.interactionNotAllowed` when only locked items could match.
    func search(group: String?, service: String? = nil, account: String? = nil, pairs: [String: String] = [:]) throws -> [FoundItem] {
        var query: Attributes = [.class: .itemClass(.genericPassword), .matchLimit: .matchLimitAll, .returnAttributes: true,
                                 .returnPersistentRef: true, .synchronizable: .synchronizableAny]
        if let group { query[.accessGroup] = .string(group) }
        if let service { query[.service] = .string(service) }
        if let account { query[.account] = .string(account) }
        if !pairs.isEmpty { query[.matchSecretAttributes] = .data(SecretServicePairs.encode(pairs, contentType: "")) }
        do {
            return (try send(Request(.copyMatching, query: query)).result.array ?? []).compactMap(\.item)
        } catch KeychainStatus.itemNotFound {
            return []
        }
    }

    /// One item by reference, with its secret when asked; nil when it is gone or not the caller's.
    func item(ref: [UInt8], group: String, secret: Bool = false) throws -> FoundItem? {
        var query: Attributes = [.class: .itemClass(.genericPassword), .valuePersistentRef: .data(ref), .returnAttributes: true,
                                 .returnPersistentRef: true, .synchronizable: .synchronizableAny]
        if secret { query[.returnData] = true }
        do {
            guard let item = try send(Request(.copyMatching, query: query)).result.value?.item,
                  item.attributes[.accessGroup]?.stringValue == group else { return nil }
            return item
        } catch KeychainStatus.itemNotFound {
            return nil
        }
    }

    /// Adds a generic password; returns its persistent reference.
    func add(_ attributes: Attributes, secret: SecureBytes) throws -> [UInt8] {
        var query = attributes
        query[.class] = .itemClass(.genericPassword)
        query[.returnPersistentRef] = true
        let r = try send(Request(.add, query: query, secrets: [secret])).result
        guard case .persistentRef(let ref)? = r.value else { throw KeychainStatus.decode }
        return ref
    }

    /// Changes an item's attributes, and its secret when one is given.
    func update(ref: [UInt8], changes: Attributes, secret: SecureBytes?) throws {
        try send(Request(.update, query: [.class: .itemClass(.genericPassword), .valuePersistentRef: .data(ref), .synchronizable: .synchronizableAny], changes: changes,
                         secrets: secret.map { [$0] } ?? []))
    }

    func delete(ref: [UInt8]) throws {
        try send(Request(.delete, query: [.class: .itemClass(.genericPassword), .valuePersistentRef: .data(ref), .synchronizable: .synchronizableAny]))
    }

    func lock() throws { try send(Request(.lock)) }
}
