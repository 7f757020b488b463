import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import Synchronization

/// `export` and `import` requests (docs/backup-format.md). The daemon holds the keys, so it
/// seals and opens backups; the CLI reads and writes the file. A backup larger than one frame
/// travels in pieces of `BackupTransfers.pieceSize`, all on one numbered transfer.
///
/// The requests are `ExportRequest` and `ImportRequest` (TypedRequests.swift):
/// Export:  options kdf, synchronizable-only; secret: the backup passphrase.
///          → info size, items, damaged, data (first piece) [, transfer].
///          options transfer, offset → info data (the piece at offset).
/// Import:  options size, data (a piece) [, transfer], policy, groups (keep|skip); secret: the
///          backup passphrase with the last piece. → info transfer, received until the last
///          piece; then added, replaced, skipped, groups-created, groups-missing.
///          option purge-other-device → info deleted: ThisDeviceOnly items of another machine.
/// Both are for administrators only; their rows in `OperationTable` say so. The replies are
/// `ExportPiece` and `ImportProgress` (TypedReplies.swift).
extension Daemon {
    func exportBackup(_ request: ExportRequest, caller: CallerIdentity) throws -> ExportPiece {
        let passphrase: SecureBytes, kdf: KDFParameters, syncOnly: Bool
        switch request {
        case .piece(let id, let offset):
            return ExportPiece(data: try BackupTransfers.shared.piece(id, offset: Int(offset), uid: caller.uid))
        case .start(let p, let preset, let synchronizableOnly):
            passphrase = p
            kdf = preset.flatMap(KDFParameters.init(presetName:)) ?? .moderate  // a preset decoding checked
            syncOnly = synchronizableOnly
        }
        let groups = state.withLock { $0.groupTable.groups.map(\.record) }
        let export: BackupExport
        do {
            export = try vault.exportBackup(passphrase: passphrase, kdf: kdf, synchronizableOnly: syncOnly, groups: groups)
        } catch let needed as BackupApprovalNeeded {
            // Presence-gated secrets leave only with the approval program's consent, one by one,
            // asked with the vault's lock released.
            var approved = Set<PersistentRef>()
            for item in needed.items {
                let status = approvePresence(ref: item.ref, attributes: item.attributes, caller: caller)
                guard status == .success else { throw status }
                approved.insert(item.ref)
            }
            do {
                export = try vault.exportBackup(passphrase: passphrase, kdf: kdf, synchronizableOnly: syncOnly,
                                                approved: approved, groups: groups)
            } catch is BackupApprovalNeeded {
                throw KeychainStatus.interactionNotAllowed  // new gated items arrived meanwhile
            }
        }
        // No line, no backup: the export is refused before any of it leaves.
        try audit(.export, caller, "items=\(export.itemCount)")
        let first = min(export.bytes.count, BackupTransfers.pieceSize)
        var reply = ExportPiece(data: Array(export.bytes[0..<first]), size: Int64(export.bytes.count),
                                items: Int64(export.itemCount), damaged: Int64(export.damagedCount))
        if first < export.bytes.count {
            reply.transfer = try BackupTransfers.shared.start(uid: caller.uid, outgoing: true, bytes: export.bytes,
                                                              expected: export.bytes.count)
        }
        log("export of \(export.itemCount) items by uid=\(caller.uid) pid=\(caller.pid)")
        return reply
    }

    func importBackup(_ request: ImportRequest, caller: CallerIdentity) throws -> ImportProgress {
        guard case .piece(let received) = request else {
            let deleted = try auditedChange(.purgeOtherDevice, caller) { try vault.purgeOtherDeviceItems() }
            itemsChanged()
            log("purged \(deleted) items bound to another device, by uid=\(caller.uid) pid=\(caller.pid)")
            return ImportProgress(deleted: Int64(deleted))
        }
        let piece = received.data
        let policy = received.policy ?? .keepNewer
        let keepGroups = received.groups != .skip
        let bytes: [UInt8]
        if let id = received.transfer {
            guard let whole = try BackupTransfers.shared.append(id, piece, uid: caller.uid) else {
                return ImportProgress(transfer: id)
            }
            bytes = whole
        } else {
            guard let size = received.size, size >= Int64(piece.count),
                  size <= Int64(BackupTransfers.maximumSize) else { throw KeychainStatus.param }
            if size > Int64(piece.count) {
                let id = try BackupTransfers.shared.start(uid: caller.uid, outgoing: false, bytes: piece, expected: Int(size))
                return ImportProgress(transfer: id)
            }
            bytes = piece
        }
        guard let passphrase = received.passphrase else { throw KeychainStatus.param }
        var summary = ImportSummary()
        var created: [String] = [], missing: [String] = []
        do {
            try groupChanges.withLock { _ in
                let before = state.withLock { $0.groupTable }
                var merged = before
                summary = try auditedChange(.`import`, caller) {
                    try vault.importBackup(bytes, passphrase: passphrase, policy: policy) { records in
                        // Groups this vault lacks come with their items (`keep`), or are named (`skip`);
                        // a group defined here keeps this vault's definition.
                        for record in records {
                            guard let group = AccessGroup(record: record) else { throw KeychainStatus.decode }
                            guard merged.group(named: group.name) == nil else { continue }
                            if keepGroups { merged.groups.append(group); created.append(group.name) }
                        }
                        return created.isEmpty ? nil : (AccessGroupTable.settingName, try merged.settingValue())
                    }
                }
                if !created.isEmpty {
                    state.withLock { $0.groupTable = merged }
                    events.publish(ChangeEvent(kind: .groups))
                }
                // Restored items whose group this vault does not define are readable by no one
                // until it is made: say which (after --groups skip, or from a backup without groups).
                missing = summary.itemGroups.filter { merged.group(named: $0) == nil }.sorted()
            }
        } catch let e as BackupFileError {
            throw e.status
        }
        itemsChanged()
        var counts = "added=\(summary.added) replaced=\(summary.replaced) skipped=\(summary.skipped)"
        if !created.isEmpty { counts += " groups-created=\(created.joined(separator: ","))" }
        if !missing.isEmpty { counts += " groups-missing=\(missing.joined(separator: ","))" }
        try? audit(.imported, caller, counts)  // the import itself is already in the log
        log("import (\(counts)) by uid=\(caller.uid) pid=\(caller.pid)")
        return ImportProgress(added: Int64(summary.added), replaced: Int64(summary.replaced), skipped: Int64(summary.skipped),
                              groupsCreated: created, groupsMissing: missing)
    }
}

/// Backups in transit between the CLI and the daemon, one per transfer number, each bound to
/// the uid that started it. Abandoned transfers are dropped after `lifetime` seconds.
final class BackupTransfers: Sendable {
    static let shared = BackupTransfers()
    /// Bytes per request or response: well under `Frame.maximumLength` with the framing around it.
    static let pieceSize = 16 << 20
    /// The largest backup the daemon accepts for import.
    static let maximumSize = 1 << 32
    static let lifetime = 600.0
    static let maximumOpen = 4

    private struct Transfer {
        var uid: UInt32
        /// From the daemon to the CLI (an export) or the other way.
        var outgoing: Bool
        var bytes: [UInt8]
        var expected: Int
        var touched: Double
    }

    private let transfers = Mutex<[Int64: Transfer]>([:])

    /// Opens a transfer holding `bytes` of `expected`; returns its number.
    func start(uid: UInt32, outgoing: Bool, bytes: [UInt8], expected: Int) throws -> Int64 {
        try transfers.withLock { transfers throws(KeychainStatus) in
            Self.expire(&transfers)
            guard transfers.count < Self.maximumOpen else { throw KeychainStatus.allocate }
            var id: Int64 = 0
            repeat {
                id = randomBytes(7).reduce(0) { $0 << 8 | Int64($1) }
            } while id == 0 || transfers[id] != nil
            transfers[id] = Transfer(uid: uid, outgoing: outgoing, bytes: bytes, expected: expected,
                                     touched: monotonicSeconds())
            return id
        }
    }

    /// The piece of an outgoing transfer at `offset`; the transfer ends with its last piece.
    func piece(_ id: Int64, offset: Int, uid: UInt32) throws -> [UInt8] {
        try transfers.withLock { transfers throws(KeychainStatus) in
            Self.expire(&transfers)
            guard var t = transfers[id], t.uid == uid, t.outgoing, offset >= 0, offset < t.bytes.count else {
                throw KeychainStatus.param
            }
            let end = min(t.bytes.count, offset + Self.pieceSize)
            if end == t.bytes.count {
                transfers[id] = nil
            } else {
                t.touched = monotonicSeconds()
                transfers[id] = t
            }
            return Array(t.bytes[offset..<end])
        }
    }

    /// Adds a piece to an incoming transfer; returns the whole backup once complete.
    func append(_ id: Int64, _ piece: [UInt8], uid: UInt32) throws -> [UInt8]? {
        try transfers.withLock { transfers throws(KeychainStatus) in
            Self.expire(&transfers)
            guard var t = transfers[id], t.uid == uid, !t.outgoing, piece.count <= t.expected - t.bytes.count else {
                throw KeychainStatus.param
            }
            transfers[id] = nil   // no copy-on-write of a large buffer
            t.bytes += piece
            if t.bytes.count == t.expected { return t.bytes }
            t.touched = monotonicSeconds()
            transfers[id] = t
            return nil
        }
    }

    private static func expire(_ transfers: inout [Int64: Transfer]) {
        let now = monotonicSeconds()
        transfers = transfers.filter { now - $0.value.touched < lifetime }
    }
}
