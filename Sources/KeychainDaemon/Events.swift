import CProcess
import Dispatch
import Glibc
import KeychainAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol

/// A change worth telling `keychainfs watch` and `on_change` commands about.
struct ChangeEvent: Sendable {
    /// `add`, `update`, `delete`, `lock` or `unlock`.
    var kind: String
    var service: String?
    var account: String?
    var time = Int(Glibc.time(nil))
    /// The names, as stored bytes, whose files the change may have made, changed or removed:
    /// before and after a rename. Nil when the change names no service (drop every name).
    var touched: [(service: [UInt8], account: [UInt8]?)]?

    /// The service and account named by a request's query (and, for an update, its changes).
    init(kind: String, query: Attributes = [:], changes: Attributes = [:]) {
        self.kind = kind
        service = Self.text(changes["svce"] ?? query["svce"])
        account = Self.text(changes["acct"] ?? query["acct"])
        if let s = Self.bytes(query["svce"]) {
            let a = Self.bytes(query["acct"])
            touched = [(s, a)]
            if changes["svce"] != nil || changes["acct"] != nil {
                touched!.append((Self.bytes(changes["svce"]) ?? s, Self.bytes(changes["acct"]) ?? a))
            }
        }
    }

    /// A change made through a mount; `previous` is the name it had before a rename.
    init(kind: String, service: [UInt8]?, account: [UInt8]?, previous: (service: [UInt8], account: [UInt8]?)? = nil) {
        self.kind = kind
        self.service = service.map { String(decoding: $0, as: UTF8.self) }
        self.account = account.map { String(decoding: $0, as: UTF8.self) }
        if let service { touched = [(service, account)] + (previous.map { [$0] } ?? []) }
    }

    static func text(_ v: AttributeValue?) -> String? {
        switch v {
        case .string(let s)?: return s
        case .data(let d)?: return String(decoding: d, as: UTF8.self)
        default: return nil
        }
    }

    static func bytes(_ v: AttributeValue?) -> [UInt8]? {
        switch v {
        case .string(let s)?: return Array(s.utf8)
        case .data(let d)?: return d
        default: return nil
        }
    }

    /// What a watcher sees: names only for administrators, whose view is the whole vault.
    func info(withNames: Bool) -> Attributes {
        var out: Attributes = ["event": .string(kind), "time": .number(Int64(time))]
        if withNames {
            if let service { out["service"] = .string(service) }
            if let account { out["account"] = .string(account) }
        }
        return out
    }
}

/// The open `watch` connections. Events are written from one queue, in order; a watcher that
/// has gone away is dropped.
final class EventHub: @unchecked Sendable {
    private struct Watcher { var fd: Int32; var names: Bool; var service: String?; var account: String? }
    private let queue = DispatchQueue(label: "keychainfs.events")
    private var watchers: [Int32: Watcher] = [:]

    func add(fd: Int32, names: Bool, service: String?, account: String?) {
        queue.sync { watchers[fd] = Watcher(fd: fd, names: names, service: service, account: account) }
    }

    func remove(fd: Int32) { queue.sync { _ = watchers.removeValue(forKey: fd) } }

    func publish(_ event: ChangeEvent) {
        queue.async { [self] in
            for (fd, w) in watchers {
                // A filtered watcher gets events of its service (and account); events that name
                // nothing (a lock, a broad delete) go to everyone.
                if let s = w.service, let es = event.service, s != es { continue }
                if let a = w.account, let ea = event.account, a != ea { continue }
                // A watcher that cannot be told (no guarded memory, or gone) is dropped.
                guard let frame = try? Response(info: event.info(withNames: w.names)).encoded(),
                      (try? Frame.write(frame, to: fd)) != nil else { watchers[fd] = nil; continue }
            }
        }
    }
}

/// Runs a mount's `on_change` command for one change, without waiting for it.
func runChangeCommand(_ command: String, event: ChangeEvent, mountpoint: String) {
    var env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "KEYCHAINFS_EVENT=\(event.kind)", "KEYCHAINFS_MOUNTPOINT=\(mountpoint)"]
    if let s = event.service { env.append("KEYCHAINFS_SERVICE=\(s)") }
    if let a = event.account { env.append("KEYCHAINFS_ACCOUNT=\(a)") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    kcfs_spawn_actions_closefrom(&actions, 3)
    var argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
    var cenv: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
    defer { for p in argv { free(p) }; for p in cenv { free(p) } }
    var pid: pid_t = 0
    guard posix_spawn(&pid, "/bin/sh", &actions, nil, &argv, &cenv) == 0 else { return }
    let child = pid
    DispatchQueue.global().async {
        var status: Int32 = 0
        waitpid(child, &status, 0)  // reap it
    }
}
