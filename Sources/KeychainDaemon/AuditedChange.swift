import KeychainfsAccess
import KeychainCore

extension Daemon {
    /// Runs a change the audit log must show (add, update, delete, a group or passphrase change,
    /// an import). Its line is written first, so a change whose line cannot be written is
    /// refused before it is made, with errSecDiskFull or errSecIO. A change that then fails is
    /// followed by an `EVENT-failed` line, detail `status=N`; if that line is lost as well, the
    /// log shows an attempt as made, never a change as missing.
    func auditedChange<R>(_ event: String, _ caller: CallerIdentity, _ detail: String = "-",
                          _ change: () throws -> R) throws -> R {
        try audit(event, caller, detail)
        do {
            return try change()
        } catch {
            try? audit(event + "-failed", caller, "status=\(Self.status(of: error).rawValue)")
            throw error
        }
    }
}
