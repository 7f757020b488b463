import KeychainClient
import KeychainSystem
import Synchronization

/// `keychainfs ssh-agent`: OpenSSH's agent protocol over the vault's keys (docs/ssh-agent.md).
/// It holds no key: it lists and signs through the daemon as the user it runs as, so what it
/// offers is what that user's access groups allow, and the daemon audits every signature.
public final class SSHAgentServer: Sendable {
    private let listener: FileDescriptor
    private let connect: @Sendable () throws -> DaemonClient
    /// Keys `ssh-add` gives are stored extractable (`keychainfs ssh-agent --extractable`).
    private let storesExtractable: Bool
    /// `ssh-add -d`/`-D` delete keys from the vault (`keychainfs ssh-agent --delete-removed`).
    private let deletesRemoved: Bool
    private let state = AgentState()
    private let sessions = Atomic<Int>(0)

    /// Connections served at once; more are closed unanswered. One user's clients (an ssh per
    /// session, git, ssh-add) are far fewer.
    public static let maximumSessions = 128

    /// - Parameters:
    ///   - listener: a listening socket (`AgentSocket.listen`, or one systemd passed).
    ///   - connect: opens a connection to the vault's daemon; each client connection gets its own.
    ///   - storesExtractable: keys `ssh-add` gives are stored extractable, so `export` and the
    ///     mount can give them out; by default they are not.
    ///   - deletesRemoved: `ssh-add -d` and `-D` delete the keys from the vault, not only from
    ///     this agent's list.
    public init(listener: FileDescriptor, storesExtractable: Bool = false, deletesRemoved: Bool = false,
                connect: @escaping @Sendable () throws -> DaemonClient) {
        self.listener = listener
        self.storesExtractable = storesExtractable
        self.deletesRemoved = deletesRemoved
        self.connect = connect
    }

    /// Accepts clients until the listener fails; each is served on a thread of its own.
    /// Only this user's processes (and root's) are served: the socket's directory keeps others
    /// out, and the peer's credentials are checked again here.
    public func run() throws {
        while true {
            let client = try nextClient()
            guard let peer = servedPeer(client) else {
                try? client.close()
                continue
            }
            guard sessions.add(1, ordering: .relaxed).newValue <= Self.maximumSessions,
                  start(SessionStart(socket: client, peer: peer, connect: connect, state: state, storesExtractable: storesExtractable,
                                                deletesRemoved: deletesRemoved)) else {
                sessionEnded()
                try? client.close()
                continue
            }
        }
    }
}

extension SSHAgentServer {
    /// The next connection; one that ended before it was taken is skipped. Out of descriptors
    /// or kernel memory (many clients at once), the agent waits a moment and goes on: only a
    /// listener that is broken ends it.
    private func nextClient() throws(Errno) -> FileDescriptor {
        while true {
            do {
                return try listener.accept()
            } catch .connectionAborted {
                continue
            } catch .tooManyOpenFiles, .tooManyOpenFilesInSystem, .noBufferSpace, .noMemory {
                SystemClock.sleep(microseconds: 10_000)
            }
        }
    }

    /// The peer when it is this user or root, by the kernel's credentials of the connection,
    /// with its executable read now, while the connection pins the process (the audit names it).
    private func servedPeer(_ client: FileDescriptor) -> AgentClient? {
        guard let peer = try? client.peerCredentials(), peer.uid == 0 || peer.uid == CurrentProcess.effectiveUserID else { return nil }
        return AgentClient(uid: peer.uid, pid: peer.pid, executable: client.peerExecutable(pid: peer.pid))
    }

    // Atomic is noncopyable: a closure reaches it through the server, never captures it.
    private func sessionEnded() { sessions.subtract(1, ordering: .relaxed) }

    /// Serves `session` on a thread of its own; false when no thread can be made.
    private func start(_ session: SessionStart) -> Bool {
        let thread = Result { () throws(Errno) in
            try SystemThread.detach { [self] in
                session.run()
                sessionEnded()
            }
        }
        if case .failure = thread { return false }
        return true
    }
}

/// What a session's thread needs, handed over whole: the session itself (not `Sendable`) is
/// made on that thread and never leaves it.
private struct SessionStart: Sendable {
    let socket: FileDescriptor
    let peer: AgentClient
    let connect: @Sendable () throws -> DaemonClient
    let state: AgentState
    let storesExtractable: Bool
    let deletesRemoved: Bool

    func run() {
        let keys = VaultKeys(connect: connect, storesExtractable: storesExtractable, deletesRemoved: deletesRemoved)
        AgentSession(socket: socket, client: peer, keys: keys, state: state).serve()
    }
}

/// The process a session serves, as the kernel named it when it connected.
struct AgentClient: Sendable {
    let uid: UInt32
    let pid: Int32
    let executable: String?
}
