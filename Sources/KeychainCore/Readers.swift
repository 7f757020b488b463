import KeychainCrypto
import KeychainSystem
import SQLiteStore
import Synchronization

/// What one search runs on: a connection to the vault file and the scratch memory that opening
/// its rows needs. Either a reader's read-only connection, taken from `ReaderPool` for one search
/// at a time, or the vault's write connection, used with the vault's mutex held: one thread at
/// a time either way, so nothing here is locked.
final class SearchContext: @unchecked Sendable {
    let store: ItemStore
    /// Guarded memory for the item key and the attribute plaintext of the row being opened;
    /// zeroed as soon as the row is decoded, so it holds nothing between rows.
    let scratch: SecureBytes
    /// Group tokens by group name. The index key never changes while a vault is open (it is
    /// wiped only at close), so neither do they; a token is no secret (it is stored in the clear).
    /// One thread at a time uses a context, so Swift's run-time exclusivity check is left out.
    @exclusivity(unchecked) private var groupTokens: [String: [UInt8]] = [:]

    /// The last group token asked for here: a lookup asks for its group's twice (the row's
    /// column, then the opened `agrp`), and most callers have one group.
    @exclusivity(unchecked) private var lastGroup: (name: String, token: [UInt8])?

    /// The last directory token made here (`directoryToken`).
    @exclusivity(unchecked) private var lastDirectory: (name: AttributeKey, value: AttributeValue, itemClass: ItemClass, token: [UInt8])?

    static let scratchBytes = 4096
    private static let groupTokenLimit = 256

    /// The pool's commit count when this reader's open read transaction began; nil when none is
    /// open (`ReaderPool.keepsSnapshots`). Touched by the thread that holds the reader, or
    /// under the pool's lock while it is idle.
    @exclusivity(unchecked) var snapshotCommits: UInt64?

    /// Makes this reader's open transaction one that sees every commit counted in `commits`:
    /// kept when it began at that count, else ended and begun again. False when the old one
    /// cannot be ended (a statement still running): the reader must not serve then.
    func holdSnapshot(at commits: UInt64) -> Bool {
        if snapshotCommits == commits, store.db.inTransaction { return true }
        guard endSnapshot() else { return false }
        // The snapshot itself is taken at the search's first read, after `commits` was read.
        if (try? store.db.beginReadSnapshot()) != nil { snapshotCommits = commits }
        return true
    }

    /// Ends the open read transaction, if any. False when it stays open.
    @discardableResult
    func endSnapshot() -> Bool {
        snapshotCommits = nil
        guard store.db.inTransaction else { return true }
        try? store.db.endReadSnapshot()
        return !store.db.inTransaction
    }

    init(store: ItemStore) throws {
        self.store = store
        scratch = try SecureBytes(count: Self.scratchBytes)
    }

    /// `IndexToken.group(name)`, computed once per connection.
    func groupToken(_ name: String, indexKey: SecureBytes) -> [UInt8] {
        if let last = lastGroup, last.name == name { return last.token }
        let token: [UInt8]
        if let known = groupTokens[name] {
            token = known
        } else {
            token = IndexToken.group(name, key: indexKey)
            if groupTokens.count >= Self.groupTokenLimit { groupTokens.removeAll() }
            groupTokens[name] = token
        }
        lastGroup = (name, token)
        return token
    }
}

extension SearchContext {
    /// `IndexToken.attribute` of a service or server, kept for the next search: a mount's
    /// lookups of new names come one directory at a time, each a keyed hash otherwise. Fixed
    /// while the vault is open, as group tokens are.
    func directoryToken(_ name: AttributeKey, _ value: AttributeValue, itemClass: ItemClass, indexKey: SecureBytes) -> [UInt8] {
        if let last = lastDirectory, last.name == name, last.itemClass == itemClass, last.value == value { return last.token }
        let token = IndexToken.attribute(name, value, itemClass: itemClass, key: indexKey)
        lastDirectory = (name, value, itemClass, token)
        return token
    }
}

/// Read-only connections to one vault file for searches that run beside each other and beside
/// writes (SQLite in WAL mode: a reader sees every transaction committed before its statement
/// began, and never waits for the writer). Made when first needed, up to `limit` at once, and
/// kept for the next search; past the limit a search runs on the write connection under the
/// vault's mutex instead (`Vault.withReader`).
final class ReaderPool: Sendable {
    private struct State {
        var idle: [SearchContext] = []
        var opened = 0
        var limit: Int
    }
    private let state: Locked<State>
    private let path: String
    private let schema: SchemaState

    /// Readers beside the write connection: enough for the daemon's event threads and a mount's.
    static let defaultLimit = 8

    init(path: String, schema: SchemaState, limit: Int = ReaderPool.defaultLimit) {
        self.path = path
        self.schema = schema
        state = Locked(State(limit: limit))
    }

    /// Readers this pool may hold at once; 0 sends every search to the write connection (tests
    /// compare the two). Readers already open stay until given back past the limit.
    var limit: Int {
        get { state.withLock { $0.limit } }
        set { state.withLock { $0.limit = newValue } }
    }

    /// An idle reader, a new one while fewer than `limit` exist, or nil: at the limit, or when
    /// a connection cannot be opened now (the caller then reads on the write connection).
    /// With `keepsSnapshots`, its read transaction sees every commit made before this call.
    func take() -> SearchContext? {
        let reuse = state.withLock { s -> SearchContext?? in
            guard s.limit > 0 else { return .none }
            if let last = s.idle.popLast() { return .some(last) }
            guard s.opened < s.limit else { return .none }
            s.opened += 1
            return .some(nil)  // room for one more, opened outside the lock
        }
        let context: SearchContext
        switch reuse {
        case .none: return nil
        case .some(let idle?): context = idle
        case .some(nil):
            guard let opened = try? open() else {
                state.withLock { $0.opened -= 1 }
                return nil
            }
            context = opened
        }
        // Kept snapshots turned off since this reader's last search: its own goes too.
        let fresh = keepsSnapshots.load(ordering: .relaxed)
            ? context.holdSnapshot(at: commits.load(ordering: .acquiring)) : context.endSnapshot()
        if fresh { return context }
        // A snapshot that cannot be ended would serve stale rows: the reader is closed instead.
        state.withLock { $0.opened -= 1 }
        return nil
    }

    /// Gives a reader back after its search; its statements are reset. A read transaction it
    /// holds stays open for the next search unless a commit came since it began.
    func give(_ context: SearchContext) {
        let surplus = state.withLock { s -> SearchContext? in
            guard s.opened <= s.limit else { s.opened -= 1; return context }
            if let began = context.snapshotCommits, began != commits.load(ordering: .acquiring) {
                guard context.endSnapshot() else { s.opened -= 1; return context }
            }
            s.idle.append(context)
            return nil
        }
        withExtendedLifetime(surplus) {}  // closed outside the lock
    }

    /// Keep each reader's read transaction open between searches while nothing is committed:
    /// a search then takes no lock and reads no WAL index of its own. Only for a vault this
    /// process alone writes (the daemon holds the vault's claim): a commit by another process
    /// is not counted, and a reader would keep reading the snapshot from before it.
    let keepsSnapshots = Atomic<Bool>(false)
    /// Transactions the write connection committed (`commitSeen`).
    private let commits = Atomic<UInt64>(0)

    /// Called after each commit of the write connection: a reader's next search starts a new
    /// snapshot, and the idle readers end theirs now, so no old snapshot holds the WAL back
    /// from a checkpoint.
    func commitSeen() {
        commits.add(1, ordering: .releasing)
        state.withLock { s in
            for context in s.idle where context.snapshotCommits != nil || context.store.db.inTransaction {
                context.endSnapshot()
            }
        }
    }

    /// Idle readers whose read transaction is open (tests).
    var idleSnapshots: Int {
        state.withLock { s in s.idle.filter { $0.store.db.inTransaction }.count }
    }

    /// Frees the page caches of the idle readers (`PRAGMA shrink_memory`), after a scan of a
    /// large directory filled them; a reader in use keeps its own.
    func shrinkIdle() {
        let idle = state.withLock { s -> [SearchContext] in
            defer { s.idle = [] }
            return s.idle
        }
        for context in idle { try? context.store.db.execute("PRAGMA shrink_memory") }
        state.withLock { $0.idle += idle }
    }

    /// Closes every idle reader (the vault is closing: none is in use then).
    func closeAll() {
        let closing = state.withLock { s -> [SearchContext] in
            defer { s.idle = []; s.opened = 0 }
            return s.idle
        }
        withExtendedLifetime(closing) {}  // their connections close here, outside the lock
    }

    private func open() throws -> SearchContext {
        let db = try Connection(path: path, create: false, readOnly: true)
        let store = ItemStore(db: db, schema: schema)
        try store.configureReader()
        return try SearchContext(store: store)
    }
}

/// What every connection of one vault must agree on about its schema.
final class SchemaState: Sendable {
    /// Version 2: every generic password has its Secret Service pair tokens (version 1 gains
    /// them in one step, `markSecretAttributeTokens`, on the write connection).
    private let secretAttributeTokens = Atomic<Bool>(true)

    var hasSecretAttributeTokens: Bool {
        get { secretAttributeTokens.load(ordering: .acquiring) }
        set { secretAttributeTokens.store(newValue, ordering: .releasing) }
    }
}
