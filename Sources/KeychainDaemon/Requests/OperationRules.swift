import KeychainProtocol

/// Who may ask for an operation. Checked once, before any handler runs (`Daemon.respond`).
enum Right {
    /// Any local user: the handler decides by the caller's groups (an outsider sees nothing).
    case anyone
    /// Callers entitled to at least one access group, and administrators.
    case entitled
    /// The vault's owner and root.
    case administrator
    /// Administrators, and callers entitled to a group that grants locking (`--may-lock`).
    case locker
    /// Administrators, and callers entitled to a group that grants reading the audit log
    /// (`--may-audit`).
    case auditor
}

/// How the daemon admits an operation and where it runs.
struct OperationRule {
    var right: Right
    /// How many secrets the request may carry; more is errSecParam before anything else runs.
    var secrets: ClosedRange<Int>
    /// Runs on a slow worker: it waits for a passphrase check, a program, a mount or a scan.
    var slow: Bool

    init(_ right: Right, secrets: ClosedRange<Int> = 0...0, slow: Bool = false) {
        self.right = right
        self.secrets = secrets
        self.slow = slow
    }

    /// Every operation's rule, in one table.
    static func of(_ operation: Operation) -> OperationRule {
        switch operation {
        case .ping, .info, .groupList: return OperationRule(.anyone)
        // No secret: the approval program gives the passphrase (`by` = approval-program).
        case .unlock: return OperationRule(.anyone, secrets: 0...1, slow: true)
        case .add, .update: return OperationRule(.anyone, secrets: 0...1)
        case .copyMatching, .delete: return OperationRule(.anyone)
        case .useKey: return OperationRule(.anyone, secrets: 1...1)
        case .lock: return OperationRule(.locker, slow: true)
        case .watch: return OperationRule(.entitled)
        case .changePassphrase: return OperationRule(.administrator, secrets: 2...2, slow: true)
        case .setSettings, .groupAdd, .groupSet, .groupRemove:
            return OperationRule(.administrator)
        case .audit: return OperationRule(.auditor)
        case .stop: return OperationRule(.administrator)
        case .mount, .unmount, .verify: return OperationRule(.administrator, slow: true)
        case .export, .import: return OperationRule(.administrator, secrets: 0...1, slow: true)
        case .sync: return OperationRule(.administrator, slow: true)
        }
    }
}
