import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol
import KeychainSystem

/// `export`, `import` and `purge-other-device-items`: backups (docs/backup-format.md) and
/// vault files moved from another machine. The daemon seals and opens; this side moves bytes.
enum BackupVerbs {
    static let all: [Verb] = [export, `import`, purge]

    static let export = Verb(
        name: "export", usage: "--out FILE [--synchronizable-only] [--kdf interactive|moderate|sensitive] [--quiet] [VAULT]\n"
            + "       keychainfs export [-k VAULT] [-t certs|pubKeys|...] [-f pemseq|x509|openssl] [-p] [-l LABEL] [-o FILE]",
        summary: "Write a passphrase-protected backup (--out), or certificates and public keys (-t).",
        valued: Set(["--out", "--kdf"]).union(ExportVerbs.valued), flags: Set(["--synchronizable-only", "--quiet"]).union(ExportVerbs.flags),
        details: """
        The backup holds every item of the classes WhenUnlocked, AfterFirstUnlock and Always
        (ak, ck, dk), of every access group, with its attributes, access control and secret;
        never a ThisDeviceOnly or WhenPasscodeSet item. --synchronizable-only keeps sync=1 items
        only. The backup passphrase is read from standard input when it is not a terminal (one
        line), else asked twice. --kdf sets its Argon2id cost (default moderate). FILE is written
        with mode 0600 and replaced atomically. The vault must be unlocked; presence-gated items
        need the approval program's consent. Root and the daemon's user only. On a terminal,
        standard error shows how much of the backup has arrived, unless --quiet.

        """ + "\n" + ExportVerbs.details
    ) { ctx in
        if ExportVerbs.isMacOSForm(ctx) { return Engine.exec(CommandLine.arguments) }  // libcrypto's work
        try ctx.checkPositionals()
        guard let out = ctx.args.value("--out"), !out.isEmpty else { throw UsageError("export needs --out FILE") }
        let kdf = ctx.args.value("--kdf")
        if let k = kdf, KDFParameters(presetName: k) == nil { throw UsageError("--kdf takes interactive, moderate or sensitive") }
        let client = try ctx.client()
        let pass: SecureBytes
        if Terminal.stdinIsTerminal {
            pass = try Terminal.prompt("Backup passphrase: ")
            let again = try Terminal.prompt("Repeat backup passphrase: ")
            guard pass.constantTimeEquals(again) else { throw UsageError("the passphrases differ") }
        } else {
            guard let line = try Terminal.readLine(0) else { throw UsageError("no backup passphrase on standard input") }
            pass = line
        }
        guard pass.count > 0 else { throw UsageError("the backup passphrase is empty") }
        let progress = TransferProgress("export", ctx.args)
        defer { progress.finish() }
        progress.update("sealing the items...")
        let start = ExportRequest.start(passphrase: pass, kdf: kdf, synchronizableOnly: ctx.args.has("--synchronizable-only"))
        let first = try client.call(start, ExportPiece.self)
        guard let size = first.size else { throw KeychainStatus.decode }
        var bytes = first.data
        if bytes.count < size {
            guard let transfer = first.transfer else { throw KeychainStatus.decode }
            bytes.reserveCapacity(Int(size))
            while bytes.count < size {
                progress.update(TransferProgress.amount(bytes.count, of: Int(size)))
                let piece = try client.call(ExportRequest.piece(transfer: transfer, offset: Int64(bytes.count)), ExportPiece.self).data
                guard !piece.isEmpty else { throw KeychainStatus.decode }
                bytes += piece
            }
        }
        guard bytes.count == size else { throw KeychainStatus.decode }
        progress.finish(TransferProgress.amount(bytes.count, of: Int(size)))
        if let failure = writeAtomically(bytes, to: out) {
            throw StateError(message: "cannot write \(out): \(failure)", status: .io)
        }
        Terminal.writeString(1, "exported \(first.items ?? 0) items to \(out)\n")
        if let damaged = first.damaged, damaged > 0 {
            Terminal.warn("\(damaged) damaged item(s) could not be opened and are not in the backup")
        }
        return 0
    }

    static let `import` = Verb(
        name: "import", usage: "FILE [--replace | --keep-newer] [--groups keep|skip] [--quiet] [VAULT]\n"
            + "       keychainfs import KEYFILE [-k VAULT] [-t pub|priv|cert|agg] [-f FORMAT] [-x] [-l LABEL]",
        summary: "Restore a backup made by export, or import keys and certificates.",
        valued: Set(["--groups"]).union(ImportVerbs.valued), flags: Set(["--replace", "--keep-newer", "--quiet"]).union(ImportVerbs.flags),
        details: """
        The backup passphrase is read from standard input when it is not a terminal, else asked
        for. All items are added in one transaction: a wrong passphrase (exit 51), a damaged or
        truncated file (exit 93) or a backup from a newer keychainfs (exit 49) imports nothing.
        An item whose primary key is already in the vault: --keep-newer (the default) keeps the
        one modified last (an item that can never be read here counts as older); --replace
        always takes the backup's. Prints "added N, replaced N, skipped N". Items keep their
        access groups. The backup carries the definitions of those groups (owner, group, mode,
        programs, --may-lock): --groups keep (the default) creates the ones this vault lacks, in
        the same transaction, and prints "created groups: A, B"; a group this vault already has
        keeps its definition here. --groups skip creates none. Either way, restored items whose
        group this vault does not define (skipped, or a backup made before groups were carried)
        are named in a warning: nobody can read them until `group add` makes the group.
        The vault must be unlocked for WhenUnlocked items. On a terminal, standard error shows
        how much of the backup has been sent, then the number of items restored, unless --quiet.

        """ + "\n" + ImportVerbs.details
    ) { ctx in
        guard let file = ctx.args.positionals.first, ImportVerbs.isBackup(file) else {
            return Engine.exec(CommandLine.arguments)  // keys and certificates: libcrypto's work (ImportVerbs)
        }
        return try importBackup(ctx)
    }

    /// The backup import; ImportVerbs hands it a file that is a backup or no key file at all.
    static func importBackup(_ ctx: Context) throws -> Int32 {
        let positionals = ctx.args.positionals
        guard (1...2).contains(positionals.count) else { throw UsageError("import needs a FILE") }
        guard !(ctx.args.has("--replace") && ctx.args.has("--keep-newer")) else {
            throw UsageError("give --replace or --keep-newer, not both")
        }
        let file = positionals[0]
        let vault = Paths.canonical(positionals.count == 2 ? positionals[1] : Paths.defaultVault())
        let bytes: [UInt8]
        switch readFile(file) {
        case .success(let b): bytes = b
        case .failure(let why):
            throw StateError(message: "cannot read \(file): \(why.message)", status: .io)
        }
        // The frozen part of the header says what this is before anything is sent.
        do {
            _ = try BackupFormat.version(of: bytes)
        } catch let e as BackupFileError {
            throw StateError(message: e.description, status: e.status)
        } catch {
            throw nothingImported(.decode, "\(file) is not a keychainfs backup (or it is damaged), nor a key or certificate file")
        }
        let client = try Engine.connect(vault)
        let pass = try Terminal.passphrase(ctx.args, prompt: "Backup passphrase: ")
        let policy: ImportPolicy = ctx.args.has("--replace") ? .replace : .keepNewer
        guard let groups = BackupPiece.Groups(rawValue: ctx.args.value("--groups") ?? "keep") else {
            throw UsageError("--groups takes keep or skip")
        }
        var info = ImportProgress()
        let progress = TransferProgress("import", ctx.args)
        do {
            defer { progress.finish() }  // before any error is printed
            var transfer: Int64?
            var sent = 0
            repeat {
                let end = min(bytes.count, sent + BackupVerbs.pieceSize)
                let last = end == bytes.count
                let piece = BackupPiece(data: Array(bytes[sent..<end]), size: Int64(bytes.count), transfer: transfer, policy: policy,
                                        groups: groups, passphrase: last ? pass : nil)
                if last {
                    progress.update(TransferProgress.amount(bytes.count, of: bytes.count) + " sent, opening and restoring the items...")
                } else if sent == 0 {
                    progress.update(TransferProgress.amount(0, of: bytes.count))
                }
                info = try client.call(ImportRequest.piece(piece), ImportProgress.self)
                if transfer == nil && !last {
                    guard let t = info.transfer else { throw KeychainStatus.decode }
                    transfer = t
                }
                if !last { progress.update(TransferProgress.amount(end, of: bytes.count)) }
                sent = end
            } while sent < bytes.count
            let restored = info.added + info.replaced + info.skipped
            progress.finish(TransferProgress.amount(bytes.count, of: bytes.count) + ", \(restored) items")
        } catch KeychainStatus.authFailed {
            // The daemon answers a caller who may not administer the vault the same way.
            let administrator = CurrentProcess.effectiveUserID == 0 || CurrentProcess.effectiveUserID == Paths.vaultOwner(vault)
            throw nothingImported(.authFailed, administrator ? "the backup passphrase is wrong"
                                                              : "only root and the vault's owner may import")
        } catch KeychainStatus.decode {
            throw nothingImported(.decode, "the backup is damaged, truncated or reordered")
        }
        Terminal.writeString(1, "added \(info.added), replaced \(info.replaced), skipped \(info.skipped)\n")
        if !info.groupsCreated.isEmpty {
            Terminal.writeString(1, "created groups: \(info.groupsCreated.joined(separator: ", "))\n")
        }
        if !info.groupsMissing.isEmpty {
            Terminal.warn("restored items are in groups this vault does not define, so nobody can read them until "
                          + "they are made (keychainfs group add NAME ...): \(info.groupsMissing.joined(separator: ", "))")
        }
        return 0
    }

    static let purge = Verb(
        name: "purge-other-device-items", usage: "[--yes] [VAULT]",
        summary: "Delete the ThisDeviceOnly items of a vault file made on another machine.",
        flags: ["--yes"],
        details: """
        A vault file copied from another machine keeps its ThisDeviceOnly items (aku, cku, dku,
        akpu), but they are bound to that machine's device key and can never be read here;
        show-keychain-info counts them as "bound to another device". This deletes them, by
        protection class, without decrypting anything. On the machine the vault was made on it
        deletes nothing. It asks first unless --yes is given. Root and the daemon's user only.
        """
    ) { ctx in
        try ctx.checkPositionals()
        let client = try ctx.client()
        guard let count = try client.status().otherDevice, count > 0 else {
            Terminal.writeString(1, "no items bound to another device\n")
            return 0
        }
        if !ctx.args.has("--yes") {
            guard Terminal.stdinIsTerminal else { throw UsageError("purge-other-device-items needs --yes when not on a terminal") }
            let answer = try Terminal.prompt("Delete \(count) item(s) bound to another device? Type yes: ")
            guard answer.withUnsafeBytes({ Array($0) }) == Array("yes".utf8) else { throw KeychainStatus.userCanceled }
        }
        let r = try client.call(ImportRequest.purgeOtherDevice, ImportProgress.self)
        Terminal.writeString(1, "deleted \(r.deleted ?? 0) item(s) bound to another device\n")
        return 0
    }

    /// Bytes per request: well under the 64 MiB frame limit with the framing around them.
    static let pieceSize = 16 << 20

    /// Apple's sentence for `status`, then why nothing was imported.
    static func nothingImported(_ status: KeychainStatus, _ why: String) -> StateError {
        StateError.explained(status, "nothing was imported: \(why)")
    }

    struct FileFailure: Error {
        let message: String
        init(_ errno: Errno) { message = errno.description }
    }

    static func readFile(_ path: String) -> Result<[UInt8], FileFailure> {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, .readOnly) } catch { return .failure(FileFailure(error)) }
        defer { try? fd.close() }
        let st: FileStatus
        do { st = try fd.status() } catch { return .failure(FileFailure(error)) }
        guard st.kind == .regular else { return .failure(FileFailure(.invalidArgument)) }
        var out = [UInt8](repeating: 0, count: Int(st.size))
        let done: Int
        do { done = try out.withUnsafeMutableBytes { try fd.readAll(into: $0) } } catch {
            return .failure(FileFailure(Errno(error)))
        }
        out.removeSubrange(done...)
        return .success(out)
    }

    /// Writes `bytes` to a new 0600 file beside `path`, syncs it and renames it over `path`,
    /// so a reader sees the old file or the whole new one. Returns why it failed, or nil.
    static func writeAtomically(_ bytes: [UInt8], to path: String) -> String? {
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let fd: FileDescriptor, temp: String  // mode 0600
        do { (fd, temp) = try FileSystem.makeTemporaryFile(prefix: (dir.isEmpty ? "" : dir) + "/." + name + ".") } catch {
            return error.description
        }
        var failure: Errno?
        do { try fd.setPermissions(.ownerReadWrite) } catch { failure = error }
        if failure == nil {
            do { try bytes.withUnsafeBytes { try fd.writeAll($0) } } catch { failure = Errno(error) }
        }
        if failure == nil { do { try fd.sync() } catch { failure = error } }
        do { try fd.close() } catch { if failure == nil { failure = error } }
        if failure == nil { do { try FileSystem.rename(temp, to: path) } catch { failure = error } }
        if let failure {
            try? FileSystem.remove(temp)
            return failure.description
        }
        if let directory = try? FileDescriptor.open(dir.isEmpty ? "/" : dir, .readOnly, options: .directory) {
            try? directory.sync()
            try? directory.close()
        }
        return nil
    }
}
