import Glibc
import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainfsAccess
import KeychainSystem

/// The freedesktop Secret Service (API 0.2) on the session bus, served from a vault through its
/// daemon (docs/secret-service.md). One thread: sd-bus calls the handlers from `run`.
public final class SecretService {
    static let busName = "org.freedesktop.secrets"
    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let sessionInterface = "org.freedesktop.Secret.Session"
    static let promptInterface = "org.freedesktop.Secret.Prompt"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    /// keychainfs's own properties of the service object (`VaultComparisons`, `DaemonRequests`).
    static let providerInterface = "org.keychainfs.SecretService"

    let bus: BusConnection
    let vault: VaultItems
    var sessions = SessionTable()
    var prompts = PromptTable()
    /// The vault's items at the last look, for signals of changes made outside D-Bus.
    var snapshot = ItemSnapshot()
    /// Whole-vault comparisons with the snapshot so far (the first look included).
    var vaultComparisons = 0
    let feed: ChangeFeed?
    /// Each caller's identity, pinned per unique bus name (the bus never reuses one) from the
    /// credentials the bus daemon took from the kernel when the caller connected.
    var identities: [String: CallerIdentity] = [:]
    /// The vault's group table as read for the call or change round being handled, to decide
    /// who hears of a change (`recipients(of:)`); nil until needed.
    var signalTable: [AccessGroup]?
    /// The table as read while the change stream had this number for it (`groupTable()`).
    private var keptTable: (generation: Int, table: [AccessGroup])?
    /// Tables read from the daemon so far, and each caller's access as decided from the table
    /// of that number (decided again from a table read later).
    private var tableReads = 0
    private var keptAccess: [String: (table: Int, access: CallerAccess)] = [:]
    /// What the caller of the call being handled may reach (one thread: set by `handle`).
    var caller = CallerAccess.none
    /// This process as the daemon sees it (uid, groups, executable), read once from /proc/self.
    let provider = CallerIdentity(pid: getpid(), uid: geteuid(), gid: getegid(),
                                  groups: ProcessFiles.supplementaryGroups(of: getpid()).union([getegid()]),
                                  executable: ProcessFiles.executable(of: getpid()))

    /// Connects to the session bus (taking no file descriptors from it) and owns
    /// `org.freedesktop.secrets`.
    /// - Parameter connect: opens a connection to the vault's daemon (called again if it goes away).
    /// - Throws: `BusFailure` when there is no session bus or another process owns the name.
    public init(connect: @escaping @Sendable () throws -> DaemonClient) throws {
        bus = try BusConnection()
        vault = VaultItems(connect: connect)
        feed = ChangeFeed(connect: connect)
        // Every path, so a call on one this service never made gets NoSuchObject (as clients
        // expect of a missing item), not sd-bus's UnknownObject.
        try bus.serve(prefix: "/") { [unowned self] m in try self.handle(m) }
        try bus.addMatch("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged'") { [unowned self] m in
            guard let name = try? m.string(), (try? m.string()) != nil, let newOwner = try? m.string(), newOwner.isEmpty else { return }
            sessions.closeAll(of: name)
            prompts.closeAll(of: name)
            identities[name] = nil
            keptAccess[name] = nil
        }
        // The first look, before any client can call: changes from here on are signalled.
        compareWithVault()
        try bus.requestName(Self.busName)
        feed?.start()
    }

    /// Serves until the bus connection closes or `stop()` is true.
    public func run(until stop: () -> Bool = { false }) throws {
        try bus.run(until: stop, alsoWatching: feed?.wakeFD) { [unowned self] in
            signalTable = nil
            applyFeed()
        }
    }

    private func handle(_ m: BusMessage) throws -> OutgoingMessage? {
        guard let object = ObjectPath(m.path) else { throw BusError.unknownObject(m.path) }
        signalTable = nil
        caller = try access(of: m.sender)
        feed?.resume()
        try authorize(object)
        if m.interface == Self.propertiesInterface { return try properties(m, object) }
        switch object {
        case .service where m.interface == Self.serviceInterface: return try serviceMethod(m)
        case .collection, .defaultAlias:
            guard m.interface == Self.collectionInterface else { return nil }
            return try collectionMethod(m, group: try group(of: object))
        case .item(let group, let ref) where m.interface == Self.itemInterface:
            return try itemMethod(m, group: group, ref: ref)
        case .session(let n) where m.interface == Self.sessionInterface && m.member == "Close":
            _ = try sessions.session(at: m.path, for: m.sender)
            sessions.close(n)
            return try m.reply()
        case .prompt(let n) where m.interface == Self.promptInterface:
            return try promptMethod(m, number: n)
        default:
            return nil
        }
    }

    /// The caller's groups, decided as the daemon decides a socket caller's: its pinned identity
    /// against the vault's group table, among the groups this process itself is entitled to.
    /// - Throws: AccessDenied when the bus does not say who the caller is.
    private func access(of sender: String) throws -> CallerAccess {
        let identity: CallerIdentity
        if let known = identities[sender] {
            identity = known
        } else {
            guard let c = bus.credentials(of: sender) else { throw BusError.accessDenied }
            identity = CallerAccess.identity(c)
            identities[sender] = identity
        }
        let table = try vaultCall { try groupTable() }
        signalTable = table
        if let kept = keptAccess[sender], kept.table == tableReads { return kept.access }
        let access = CallerAccess(caller: identity, table: table, provider: provider, owner: try vaultCall { try vault.owner() })
        keptAccess[sender] = (tableReads, access)
        return access
    }

    /// The vault's group table, kept while the daemon's change stream runs and brings no
    /// change of it: a `groups` event (which the daemon sends before it answers the change), a
    /// new stream or the stream's end makes the next call read it again, so a change of the
    /// table applies from the next D-Bus call on.
    func groupTable() throws -> [AccessGroup] {
        let generation = feed?.tableGeneration()
        if let generation, let kept = keptTable, kept.generation == generation { return kept.table }
        let table = try vault.groupTable()
        keptTable = generation.map { ($0, table) }
        tableReads += 1
        return table
    }

    /// Refuses a collection or item of a group the caller may not read: AccessDenied when this
    /// service serves the group to others, NoSuchObject otherwise (nothing is said about it).
    private func authorize(_ object: ObjectPath) throws {
        switch object {
        case .collection(let g), .item(let g, _):
            guard !caller.readable.contains(g) else { return }
            throw caller.served.contains(g) ? BusError.accessDenied : BusError.unknownObject(object.string)
        default:
            return
        }
    }

    /// Refuses a change in a group the caller may read but not write (AccessDenied).
    func authorizeWriting(_ group: String) throws {
        guard caller.writable.contains(group) else { throw BusError.accessDenied }
    }

    /// The access group a collection object names. - Throws: NoSuchObject for a group the
    /// caller is not entitled to, or `default` when the caller has none.
    func group(of object: ObjectPath) throws -> String {
        let groups = caller.readable
        switch object {
        case .collection(let g) where groups.contains(g): return g
        case .defaultAlias where !groups.isEmpty: return groups[0]
        default: throw BusError.unknownObject(object.string)
        }
    }

    /// Runs a vault call, turning its status into the D-Bus error a client understands.
    func vaultCall<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch KeychainStatus.interactionNotAllowed {
            throw BusError.isLocked
        } catch let s as KeychainStatus where s == .missingEntitlement || s == .authFailed || s == .userCanceled {
            throw BusError(name: "org.freedesktop.DBus.Error.AccessDenied", message: "the keychain refused (\(s.rawValue))")
        } catch let s as KeychainStatus {
            throw BusError(name: "org.freedesktop.DBus.Error.Failed", message: "keychain status \(s.rawValue)")
        }
    }

    /// Emits `member(o)` from a collection (ItemCreated, ItemChanged, ItemDeleted), and the
    /// collection's `Items` after a create or delete, to the connections that may read it.
    func emit(_ member: String, from collection: String, item: String) {
        noteEcho(member, item: item)
        guard case .collection(let group)? = ObjectPath(collection), !recipients(of: group).isEmpty else { return }
        signal(member, interface: Self.collectionInterface, path: collection, group: group, afterReply: true) { try $0.objectPath(item) }
        if member != "ItemChanged", let items = snapshotItems(of: group) ?? (try? searchItems(group: group, query: [:]).unlocked) {
            emitPropertiesChanged(collection, interface: Self.collectionInterface, group: group, ["Items": .paths(items)])
        }
    }
}
