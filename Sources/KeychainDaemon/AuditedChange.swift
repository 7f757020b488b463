import KeychainfsAccess
import KeychainCore

extension Daemon {
    /// Runs a change the audit log must show (add, update, delete, a group or passphrase change,
    /// an import). Its line is written first, so a change whose line cannot be written is
    /// refused before it is made, with errSecDiskFull or errSecIO. A change that then fails is
    /// followed by an `EVENT-failed` line, detail `status=N`; if that line is lost as well, the
    /// log shows an attempt as made, never a change as missing.
    func auditedChange<R>(_ event: AuditEvent, _ caller: CallerIdentity, _ detail: String = "-",
                          _ change: () throws -> R) throws -> R {
        try audit(event, caller, detail)
        do {
            return try change()
        } catch {
            try? auditLog?.recordFailure(event, caller: caller, status: Self.status(of: error).rawValue)
            throw error
        }
    }

    /// As `auditedChange`, for a change of items: `change` hands `record` to the vault, which
    /// calls it with the references of the items it added, changed or deleted, inside its
    /// transaction before the commit, so each gets its line (`EVENT REF`) and a line that cannot
    /// be written rolls the change back. A change that fails before that (a duplicate, nothing
    /// found) gets one `EVENT` line, detail `-`, and its `EVENT-failed` line, as before.
    func auditedItemChange<R>(_ event: AuditEvent, _ caller: CallerIdentity,
                              _ change: (_ record: ([PersistentRef]) throws -> Void) throws -> R) throws -> R {
        var recorded = false
        var unwritable = false
        let record: ([PersistentRef]) throws -> Void = { refs in
            do {
                if refs.isEmpty { try self.audit(event, caller) }
                for ref in refs { try self.audit(event, caller: caller, item: ref) }
            } catch {
                unwritable = true
                throw error
            }
            recorded = true
        }
        do {
            return try change(record)
        } catch {
            guard !unwritable else { throw error }  // refused: its line could not be written
            if !recorded { try? audit(event, caller) }
            try? auditLog?.recordFailure(event, caller: caller, status: Self.status(of: error).rawValue)
            throw error
        }
    }
}
