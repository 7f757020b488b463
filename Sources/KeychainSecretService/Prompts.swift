/// Prompts (`org.freedesktop.Secret.Prompt`): what a caller asked that needs the user.
enum PendingPrompt {
    /// `Unlock` of these objects while the vault is locked.
    case unlock([String])
}

struct PromptTable {
    private var pending: [Int: PendingPrompt] = [:]
    private var next = 1

    mutating func open(_ prompt: PendingPrompt) -> ObjectPath {
        pending[next] = prompt
        next += 1
        return .prompt(next - 1)
    }

    mutating func take(_ n: Int) -> PendingPrompt? { pending.removeValue(forKey: n) }
}

extension SecretService {
    /// `Prompt(window-id)` and `Dismiss()`. The vault is unlocked with its passphrase
    /// (`keychainfs unlock-keychain`); this service cannot ask for it, so an unlock prompt
    /// completes dismissed, as the specification says a refused prompt does.
    func promptMethod(_ m: BusMessage, number: Int) throws -> OutgoingMessage? {
        guard m.member == "Prompt" || m.member == "Dismiss" else { return nil }
        guard prompts.take(number) != nil else { throw BusError.unknownObject(m.path) }
        let done = try bus.signal(path: m.path, interface: Self.promptInterface, member: "Completed")
        try done.bool(true)
        try done.open("v", "ao")
        try done.objectPaths([])
        try done.close()
        bus.sendAfterReply(done)
        return try m.reply()
    }
}
