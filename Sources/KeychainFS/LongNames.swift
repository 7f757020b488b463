import KeychainCore

/// The values behind hashed long names (`%H` and 32 hex digits, docs/filesystem.md). A hash
/// cannot be reversed, so a name is matched against the vault's values; this index does that
/// once per change of the vault, not once per lookup, so that looking up a name that cannot
/// exist costs a dictionary lookup instead of decrypting every item.
final class LongNames: @unchecked Sendable {
    private let mutex = PThreadMutex()
    /// What the index was built from: the mount's entry generation and the lock state.
    private var builtFor: (generation: UInt64, state: LockState)?
    private var services: [[UInt8]: [UInt8]] = [:]
    private var accounts: [[UInt8]: [[UInt8]: [UInt8]]] = [:]

    /// Whether `name` has the form of a hashed name at all; other `%H` names cannot exist.
    static func isHashed(_ name: [UInt8]) -> Bool {
        guard name.count == 34, name.starts(with: Array("%H".utf8)) else { return false }
        return name.dropFirst(2).allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) }
    }

    /// The service (`service` nil) or account value whose hashed name is `name`, or nil.
    /// `generation` is read before the listing, so a change during it makes the next call list again.
    func value(of name: [UInt8], in service: [UInt8]?, generation: UInt64, state: LockState,
               listing: ((FileEntry) -> Void) throws -> Void) rethrows -> [UInt8]? {
        guard Self.isHashed(name) else { return nil }
        return try mutex.withLock {
            // Holding the lock through a listing: concurrent lookups wait for one listing.
            if builtFor?.generation != generation || builtFor?.state != state {
                services.removeAll()
                accounts.removeAll()
                builtFor = nil
                try listing { e in
                    let s = FileNames.escape(e.service, topLevel: true)
                    if s.count == 34, Self.isHashed(s) { services[s] = e.service }
                    let a = FileNames.escape(e.account)
                    if a.count == 34, Self.isHashed(a) { accounts[e.service, default: [:]][a] = e.account }
                }
                builtFor = (generation, state)
            }
            guard let service else { return services[name] }
            return accounts[service]?[name]
        }
    }
}
