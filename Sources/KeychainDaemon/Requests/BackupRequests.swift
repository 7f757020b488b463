import KeychainProtocol

/// export and import: backups sealed and opened by the daemon, which holds the keys
/// (Backup.swift does the work, with the group table and the approval program).
struct BackupRequests: RequestFamily {
    let context: RequestContext

    func export(_ request: ExportRequest) throws -> Outcome {
        .reply(try context.control.exportBackup(request, caller: caller))
    }

    /// A piece of a backup, or the purge of items bound to another machine.
    func `import`(_ request: ImportRequest) throws -> Outcome {
        let progress = try context.control.importBackup(request, caller: caller)
        itemsChanged(ChangeEvent(kind: .update))
        return .reply(progress)
    }
}
