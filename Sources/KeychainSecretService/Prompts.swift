import KeychainClient
import KeychainCrypto
import KeychainModel
import KeychainProtocol
import KeychainSystem

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
    /// `Prompt(window-id)` and `Dismiss()`. `Prompt` of an unlock asks for the passphrase with
    /// the vault's pinentry (`set-keychain-settings --pinentry`), run here, where the session's
    /// display and bus are, and sends it to the daemon as any client's unlock; without one it
    /// asks the daemon to unlock the vault through its approval program (`--reason unlock`,
    /// which prints the passphrase). It completes with the objects now unlocked, or dismissed
    /// when there is neither, the user cancelled, or the passphrase was wrong. The bus waits
    /// while the program runs.
    func promptMethod(_ m: BusMessage, number: Int) throws -> OutgoingMessage? {
        guard m.member == "Prompt" || m.member == "Dismiss" else { return nil }
        guard let prompt = prompts.take(number, for: m.sender) else { throw BusError.unknownObject(m.path) }
        var unlocked: [String]?
        // The approval program is told who asks: this caller's pinned uid and pid (the daemon
        // takes them from this process alone, which it names as the relay).
        let asker = identities[m.sender].map { RelayedCaller(uid: $0.uid, pid: $0.pid) }
        if m.member == "Prompt", case .unlock(let objects) = prompt, unlockAsking(for: asker) {
            unlocked = objects.filter { path in
                switch ObjectPath(path) {
                case .collection(let g)?, .item(let g, _)?: return caller.readable.contains(g)
                default: return false
                }
            }
            for group in caller.readable {
                emitPropertiesChanged(ObjectPath.collection(group: group).string, interface: Self.collectionInterface, group: group,
                                      ["Locked": .bool(false)])
            }
        }
        // Completed goes to the prompt's caller alone.
        signal("Completed", interface: Self.promptInterface, path: m.path, group: nil, only: m.sender, afterReply: true) { done in
            try done.bool(unlocked == nil)
            try done.open("v", "ao")
            try done.objectPaths(unlocked ?? [])
            try done.close()
        }
        return try m.reply()
    }

    /// Unlocks the vault with the pinentry's passphrase when the vault names one, else through
    /// the approval program. False when it stays locked.
    private func unlockAsking(for asker: RelayedCaller?) -> Bool {
        // A program another user may change is not run (`Pinentry.mayRunSetting`).
        let program = (try? VaultStatus(decoding: vault.send(BareRequest(.info).request)))?.pinentry.flatMap {
            Pinentry.mayRunSetting($0) ? $0 : nil
        }
        guard let program else { return (try? vault.send(UnlockRequest.byApprovalProgram(for: asker).request)) != nil }
        do {
            var pinentry = try Pinentry(program: program)
            pinentry.timeout = Self.pinentryTimeout
            let passphrase = try pinentry.askPassphrase(title: "keychainfs",
                                                        description: "An application asks to unlock the keychainfs vault (Secret Service).",
                                                        prompt: "Passphrase:")
            defer { passphrase.wipe() }
            _ = try vault.send(UnlockRequest.passphrase(passphrase).request)
            return true
        } catch {
            // Never the passphrase: a failure's description names the program and the cause only.
            let line = Array("keychainfs secret-service: unlock prompt: \(error)\n".utf8)
            line.withUnsafeBytes { try? Descriptor.writeAll($0, to: 2) }
            return false
        }
    }

    /// Seconds the user has to answer the pinentry a `Prompt` runs; the bus waits meanwhile.
    static let pinentryTimeout = 120
}
