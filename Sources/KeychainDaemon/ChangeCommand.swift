import CProcess
import Dispatch
import Glibc
import KeychainCore
import KeychainSystem
import Synchronization

/// Runs a mount's `on_change` command for a change of an item the mount shows, without waiting.
func runChangeCommand(_ command: String, event: ChangeEvent, mountpoint: String) {
    ChangeCommand.of(mountpoint: mountpoint, command: command).changed(event)
}

/// One mount's `on_change` command. Runs are rate-limited: at most one at a time, and after a
/// burst of `burst` runs at most `perSecond` a second. Changes that come meanwhile are folded
/// into the next run, whose `KEYCHAINFS_CHANGES` says how many changes it stands for.
final class ChangeCommand: Sendable {
    static let burst = 5.0
    static let perSecond = 5.0

    private static let registry = Mutex<[String: ChangeCommand]>([:])

    /// The runner of a mount point's command (kept for the daemon's life: one per mount made).
    static func of(mountpoint: String, command: String) -> ChangeCommand {
        registry.withLock { registry in
            let key = mountpoint + "\u{0}" + command
            if let known = registry[key] { return known }
            let made = ChangeCommand(command: command, mountpoint: mountpoint)
            registry[key] = made
            return made
        }
    }

    /// Changes not yet reported: how many, the latest kind, and the names they all share.
    struct Folded {
        var count = 0
        var kind = ChangeKind.update
        var service: String?
        var account: String?

        mutating func add(_ e: ChangeEvent) {
            service = count == 0 || service == e.service ? e.service : nil
            account = count == 0 || (service != nil && account == e.account) ? e.account : nil
            kind = e.kind
            count += 1
        }
    }

    let command: String
    let mountpoint: String
    /// What is folded and the rate limiter's state.
    private struct Runs {
        var folded = Folded()
        var running = false
        var retryArmed = false
        var tokens = burst
        var refilled = monotonicSeconds()
    }

    private let runs = Mutex(Runs())

    init(command: String, mountpoint: String) {
        self.command = command
        self.mountpoint = mountpoint
    }

    func changed(_ event: ChangeEvent) {
        runs.withLock { $0.folded.add(event) }
        startIfDue()
    }

    /// Starts a run for what is folded, unless one runs or the rate is spent (then a retry is
    /// scheduled for when the next run is due).
    private func startIfDue() {
        enum Next { case run(Folded), retry(after: Double), nothing }
        let next = runs.withLock { r -> Next in
            guard !r.running, r.folded.count > 0 else { return .nothing }
            let now = monotonicSeconds()
            r.tokens = min(Self.burst, r.tokens + (now - r.refilled) * Self.perSecond)
            r.refilled = now
            guard r.tokens >= 1 else {
                if r.retryArmed { return .nothing }
                r.retryArmed = true
                return .retry(after: (1 - r.tokens) / Self.perSecond)
            }
            r.tokens -= 1
            r.running = true
            defer { r.folded = Folded() }
            return .run(r.folded)
        }
        switch next {
        case .run(let changes):
            guard let child = spawn(changes) else {
                runs.withLock { $0.running = false }
                return
            }
            DispatchQueue.global().async { [self] in
                _ = ChildProcess.waitForExit(child)  // reap it
                runs.withLock { $0.running = false }
                startIfDue()
            }
        case .retry(let delay):
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
                runs.withLock { $0.retryArmed = false }
                startIfDue()
            }
        case .nothing:
            return
        }
    }

    private func spawn(_ changes: Folded) -> pid_t? {
        var env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   "KEYCHAINFS_EVENT=\(changes.kind.rawValue)", "KEYCHAINFS_MOUNTPOINT=\(mountpoint)",
                   "KEYCHAINFS_CHANGES=\(changes.count)"]
        if let s = changes.service { env.append("KEYCHAINFS_SERVICE=\(s)") }
        if let a = changes.account { env.append("KEYCHAINFS_ACCOUNT=\(a)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        kcfs_spawn_actions_closefrom(&actions, 3)
        var argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
        var cenv: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) }; for p in cenv { free(p) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/sh", &actions, nil, &argv, &cenv) == 0 else { return nil }
        return pid
    }
}
