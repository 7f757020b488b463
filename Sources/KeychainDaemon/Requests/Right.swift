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

