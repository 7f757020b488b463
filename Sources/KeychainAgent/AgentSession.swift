import KeychainCrypto
import KeychainModel
import KeychainProtocol
import KeychainSSHAgent
import KeychainSystem

/// One client's connection (an `ssh`, `ssh-add` or `git` process): frames in, replies out, until
/// the client closes it. Any message the agent does not take, or cannot carry out, is answered
/// with SSH_AGENT_FAILURE; a frame whose length cannot be right ends the connection.
final class AgentSession {
    private let socket: FileDescriptor
    /// Who is served, named in the audit line of each signature.
    private let client: AgentClient
    private let keys: VaultKeys
    private let state: AgentState
    /// What the last identities answer offered, so a signature right after it needs no search.
    private var offered: [VaultIdentity] = []
    /// The hosts this connection was bound to (`session-bind@openssh.com`).
    private var bindings = SessionBindings()

    /// Messages that carry a secret (a passphrase, a private key): read into guarded memory.
    private static let secretBearing: Set<UInt8> = [
        AgentMessageNumber.lock.rawValue, AgentMessageNumber.unlock.rawValue,
        AgentMessageNumber.addIdentity.rawValue, AgentMessageNumber.addIdentityConstrained.rawValue,
    ]
    /// A passphrase or a private key longer than this is refused: a 16,384-bit RSA key in SSH's
    /// encoding is under 5 KiB.
    private static let secretFrameLimit = 64 * 1024

    init(socket: FileDescriptor, client: AgentClient, keys: VaultKeys, state: AgentState) {
        self.socket = socket
        self.client = client
        self.keys = keys
        self.state = state
    }

    /// Serves until the client closes the connection or breaks the framing, then closes it.
    func serve() {
        defer { try? socket.close() }
        while let reply = nextReply() {
            let framed = AgentFrame.encode(reply.encoded())
            do { try framed.withUnsafeBytes { try socket.sendAll($0) } } catch { return }
        }
    }

    /// Reads one message and answers it; nil when the connection should end.
    private func nextReply() -> AgentResponse? {
        var header = [UInt8](repeating: 0, count: 4)
        guard (try? header.withUnsafeMutableBytes({ try socket.readAll(into: $0) })) == 4 else { return nil }
        let length = header.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        // A length that cannot be a message: the stream cannot be followed past it.
        guard length > 0, length <= AgentFrame.maximumLength else {
            try? refuse()
            return nil
        }
        var number: UInt8 = 0
        guard (try? withUnsafeMutableBytes(of: &number, { try socket.readAll(into: $0) })) == 1 else { return nil }
        let rest = Int(length) - 1
        if Self.secretBearing.contains(number) {
            guard rest <= Self.secretFrameLimit, let body = try? readSecret(rest) else {
                guard (try? discard(rest)) != nil else { return nil }
                return .failure
            }
            defer { body.wipe() }
            return answerSecret(number, body)
        }
        var frame = [UInt8](repeating: 0, count: Int(length))
        frame[0] = number
        guard rest == 0 || (try? frame.withUnsafeMutableBytes({ try socket.readAll(into: UnsafeMutableRawBufferPointer(rebasing: $0[1...])) })) == rest else {
            return nil
        }
        guard let request = try? AgentRequest.decode(frame) else { return .failure }
        return answer(request)
    }

    private func answer(_ request: AgentRequest) -> AgentResponse {
        switch request {
        case .requestIdentities:
            guard !state.isLocked, let listed = try? state.offered(keys.identities()) else { return .identities([]) }
            offered = listed
            return .identities(listed.filter { bindings.permit($0.destinations, user: nil) }
                .map { AgentIdentity(keyBlob: $0.key.blob, comment: $0.comment) })
        case .sign(let blob, let data, let flags):
            guard !state.isLocked, let identity = find(blob) else { return .failure }
            // A restricted key signs only a login to a host it may be used at, on a bound connection.
            if let destinations = identity.destinations,
               !bindings.permitSigning(data, with: destinations, keyBlob: blob) { return .failure }
            let relayed = RelayedUse(uid: client.uid, pid: client.pid, executable: client.executable,
                                     host: bindings.hops.last.map { SSHPublicKeys.fingerprint(of: $0.hostKey) })
            guard let signature = try? keys.sign(data, with: identity, flags: flags, for: relayed) else { return .failure }
            return .signature(signature)
        case .sessionBind(let bind):
            return bindings.bind(bind, hostSigned: keys.hostSigned) ? .success : .failure
        case .removeIdentity(let blob):
            guard !state.isLocked, let identity = find(blob), bindings.permit(identity.destinations, user: nil) else { return .failure }
            return remove([identity]) ? .success : .failure
        case .removeAllIdentities:
            guard !state.isLocked, let all = try? keys.identities() else { return .failure }
            // Deleting from the vault takes only the keys this connection may see.
            return remove(keys.deletesRemoved ? all.filter { bindings.permit($0.destinations, user: nil) } : all) ? .success : .failure
        case .addIdentity, .smartcard, .lock, .unlock, .extension, .unknown:
            return .failure
        }
    }

    /// `ssh-add -d`/`-D`: off this agent's list, or, for an agent started with `--delete-removed`,
    /// out of the vault. False when the daemon refused a deletion.
    private func remove(_ identities: [VaultIdentity]) -> Bool {
        var ok = true
        for identity in identities {
            if keys.deletesRemoved {
                if (try? keys.delete(identity)) == nil { ok = false }
            } else {
                state.remove(identity.key.blob)
            }
        }
        offered = []
        return ok
    }

    /// The offered identity whose key blob is `blob`: from the last answer, else from the vault now.
    private func find(_ blob: [UInt8]) -> VaultIdentity? {
        if let known = offered.first(where: { $0.key.blob == blob }) { return known }
        guard let listed = try? state.offered(keys.identities()) else { return nil }
        offered = listed
        return listed.first { $0.key.blob == blob }
    }

    /// LOCK and UNLOCK (string passphrase), ADD_IDENTITY and ADD_ID_CONSTRAINED (a private key).
    private func answerSecret(_ number: UInt8, _ body: SecureBytes) -> AgentResponse {
        if number == AgentMessageNumber.addIdentity.rawValue || number == AgentMessageNumber.addIdentityConstrained.rawValue {
            return add(body, constrained: number == AgentMessageNumber.addIdentityConstrained.rawValue)
        }
        guard let passphrase = try? Self.onlyString(body) else { return .failure }
        if number == AgentMessageNumber.lock.rawValue {
            if state.lock(passphrase) { return .success }
            passphrase.wipe()
            return .failure
        }
        defer { passphrase.wipe() }
        return state.unlock(passphrase) ? .success : .failure
    }

    /// Stores the key in the vault and offers it again if it had been removed from the list.
    /// Destinations (`ssh-add -h`) are stored with the key; constraint extensions this agent
    /// does not know are refused: a key that must be restricted is never stored unrestricted.
    private func add(_ body: SecureBytes, constrained: Bool) -> AgentResponse {
        guard !state.isLocked else { return .failure }
        let stored: Bool = body.withUnsafeBytes { bytes in
            guard let added = try? AddedIdentity.decode(bytes, constrained: constrained), added.extensions.isEmpty,
                  (try? keys.add(added, body: bytes)) != nil else { return false }
            state.restore(added.publicKey.blob)
            return true
        }
        if stored { offered = [] }
        return stored ? .success : .failure
    }

    /// The one string field that is all of `body`, copied into its own guarded buffer.
    private static func onlyString(_ body: SecureBytes) throws -> SecureBytes {
        guard body.count >= 4 else { throw SSHAgentCodecError.truncated }
        let length = body.withUnsafeBytes { $0[0..<4].reduce(0) { $0 << 8 | Int($1) } }
        guard length == body.count - 4 else { throw SSHAgentCodecError.trailingBytes }
        return try body.slice(4..<body.count)
    }

    private func readSecret(_ count: Int) throws -> SecureBytes {
        let body = try SecureBytes(count: count)
        let got = try body.withUnsafeMutableBytes { try socket.readAll(into: $0) }
        guard got == count else {
            body.wipe()
            throw SSHAgentCodecError.truncated
        }
        return body
    }

    /// Reads and drops `count` bytes, so the next frame is read from its start.
    private func discard(_ count: Int) throws {
        var left = count
        var chunk = [UInt8](repeating: 0, count: 4096)
        while left > 0 {
            let n = try chunk.withUnsafeMutableBytes { try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<min(left, 4096)])) }
            guard n > 0 else { throw SSHAgentCodecError.truncated }
            left -= n
        }
        wipeBytes(&chunk)
    }

    private func refuse() throws {
        try AgentFrame.encode(AgentResponse.failure.encoded()).withUnsafeBytes { try socket.sendAll($0) }
    }
}
