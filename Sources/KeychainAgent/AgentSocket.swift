import KeychainProtocol
import KeychainSystem

/// Where the agent listens, and the listening socket itself: a socket file only its user can
/// reach (its directory 0700, the socket 0600), as OpenSSH's agent makes it.
public enum AgentSocket {
    /// `$XDG_RUNTIME_DIR/keychainfs/ssh-agent.sock`; without that variable, the user's login
    /// runtime directory (`/run/user/UID`) when it is private, or `/run/keychainfs` for root.
    /// - Throws: `AgentSetupError` when there is no private directory to put it in.
    public static func defaultPath() throws -> String {
        if let runtime = CurrentProcess.environment("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") {
            return runtime + "/keychainfs/ssh-agent.sock"
        }
        let uid = CurrentProcess.effectiveUserID
        if uid == 0 { return "/run/keychainfs/ssh-agent.sock" }
        let login = "/run/user/\(uid)"
        guard RuntimeDirectory.problem(with: login, owner: uid) == nil, FileSystem.exists(login) else {
            throw AgentSetupError("no private runtime directory: $XDG_RUNTIME_DIR is not set and \(login) is missing; name a socket with -a PATH")
        }
        return login + "/keychainfs/ssh-agent.sock"
    }

    /// Binds and listens at `path`. The directory is made 0700 when missing and must belong to
    /// this user (or root) and be writable by nobody else; a socket left by an agent that ended
    /// is replaced, one that answers is not.
    /// - Throws: `AgentSetupError` saying what is wrong with the path.
    public static func listen(at path: String) throws -> FileDescriptor {
        guard path.hasPrefix("/") else { throw AgentSetupError("\(path): the socket path must be absolute") }
        guard FileDescriptor.fitsUnixAddress(path) else { throw AgentSetupError("\(path): too long for a socket address") }
        let directory = String(path[..<path.lastIndex(of: "/")!])
        if !directory.isEmpty, !FileSystem.exists(directory) {
            do { try FileSystem.createDirectory(directory, permissions: FilePermissions(rawValue: 0o700)) } catch Errno.fileExists {} catch {
                throw AgentSetupError("\(directory): cannot create: \(error)")
            }
        }
        if let problem = RuntimeDirectory.problem(with: directory.isEmpty ? "/" : directory, owner: CurrentProcess.effectiveUserID) {
            throw AgentSetupError("\(directory): cannot hold the agent's socket: \(problem)")
        }
        try removeStale(path)
        let socket = try FileDescriptor.unixStreamSocket()
        do {
            try socket.bind(unixPath: path)
            try FileSystem.setPermissions(of: path, to: .ownerReadWrite)
            try socket.listen(backlog: 64)
        } catch {
            try? socket.close()
            throw AgentSetupError("\(path): cannot listen: \(error)")
        }
        return socket
    }

    /// Removes a socket at `path` that nothing answers on; anything else there is an error.
    private static func removeStale(_ path: String) throws {
        guard let status = try? FileSystem.status(of: path, followingLinks: false) else { return }
        guard status.kind == .socket else { throw AgentSetupError("\(path): exists and is not a socket") }
        let probe = try FileDescriptor.unixStreamSocket()
        defer { try? probe.close() }
        do {
            try probe.connect(unixPath: path)
            throw AgentSetupError("\(path): another agent is listening there")
        } catch Errno.connectionRefused {
            try? FileSystem.remove(path)
        } catch let error as AgentSetupError {
            throw error
        } catch {
            throw AgentSetupError("\(path): cannot tell whether an agent listens there: \(error)")
        }
    }
}

/// Why the agent cannot start: a message that names the path concerned.
public struct AgentSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
