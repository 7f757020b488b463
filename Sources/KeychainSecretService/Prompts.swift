/// Prompts (`org.freedesktop.Secret.Prompt`): what a caller asked that needs the user.
enum PendingPrompt {
    /// `Unlock` of these objects while the vault is locked.
    case unlock([String])
}

/// Prompts waiting for `Prompt` or `Dismiss`, each its caller's alone, bounded per connection as
/// sessions are, and dropped when the connection leaves the bus.
struct PromptTable {
    private var pending: [Int: (owner: String, prompt: PendingPrompt)] = [:]
    private var next = 1

    /// - Throws: LimitsExceeded past `SessionTable.perConnection` prompts of `owner`.
    mutating func open(_ prompt: PendingPrompt, owner: String) throws -> ObjectPath {
        guard pending.values.filter({ $0.owner == owner }).count < SessionTable.perConnection else {
            throw BusError(name: "org.freedesktop.DBus.Error.LimitsExceeded", message: "too many pending prompts")
        }
        pending[next] = (owner, prompt)
        next += 1
        return .prompt(next - 1)
    }

    /// The prompt `n` if `sender` opened it, removed from the table.
    mutating func take(_ n: Int, for sender: String) -> PendingPrompt? {
        guard pending[n]?.owner == sender else { return nil }
        return pending.removeValue(forKey: n)?.prompt
    }

    mutating func closeAll(of owner: String) { pending = pending.filter { $0.value.owner != owner } }
}

extension SecretService {
    /// `Prompt(window-id)` and `Dismiss()`. The vault is unlocked with its passphrase
    /// (`keychainfs unlock-keychain`); this service cannot ask for it, so an unlock prompt
    /// completes dismissed, as the specification says a refused prompt does.
    func promptMethod(_ m: BusMessage, number: Int) throws -> OutgoingMessage? {
        guard m.member == "Prompt" || m.member == "Dismiss" else { return nil }
        guard prompts.take(number, for: m.sender) != nil else { throw BusError.unknownObject(m.path) }
        let done = try bus.signal(path: m.path, interface: Self.promptInterface, member: "Completed")
        try done.bool(true)
        try done.open("v", "ao")
        try done.objectPaths([])
        try done.close()
        bus.sendAfterReply(done)
        return try m.reply()
    }
}
