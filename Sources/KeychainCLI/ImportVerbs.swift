import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol
import KeychainSystem

/// `import FILE` of keys and certificates, as macOS `security import`: PEM (one or many
/// blocks) or DER private keys (PKCS#8, SEC 1 EC, PKCS#1 RSA), public keys and X.509
/// certificates. A file that is a keychainfs backup goes to the backup import instead
/// (`BackupVerbs.import`). All or nothing: a file with one bad block, or an add that fails,
/// leaves the vault as it was.
package enum ImportVerbs {
    /// Flags of the `import` verb for keys and certificates (beside the backup's).
    static let valued: Set<String> = ["-k", "-t", "-f", "-P", "-T", "-l", "--access-group"]
    static let flags: Set<String> = ["-x", "-w", "-A"]

    static let details = """
    Keys and certificates (as macOS security import), when FILE is not a backup:
      -k VAULT     the vault to import into (as the trailing VAULT)
      -t TYPE      what FILE must hold: pub, priv, cert or agg (any mix; the default)
      -f FORMAT    openssl, pkcs8, x509 or pemseq: accepted; PEM or DER is recognised from
                   the content whatever -f says. pkcs12, pkcs7, openssh and the others: exit 2
      -x           private keys are non-extractable: they sign and decrypt in the daemon,
                   and neither export, the mount nor SecKeyCopyExternalRepresentation gives them out
      -l LABEL     the label of every item imported (default: a certificate's subject
                   summary; a key takes the label of its certificate in the same file, else
                   FILE's name without its directory and extension)
      --access-group G   one of your entitled access groups
      -A           accepted: any process entitled to the item's access group may use the key
      -T, -w, -P   not supported (exit 2): access is by access group; decrypt a wrapped key
                   first (openssl pkey -in FILE -out PLAIN)
      --replace    a key or certificate already in the vault (the same key, the same
                   certificate) is replaced by the file's: its label, -x and access group
                   as this command gives them; prints "N items replaced." after the counts
    Prints "N identities imported.", "N keys imported.", "N certificates imported." (a key
    and its certificate from one file count as one identity). An item already in the vault:
    exit 45 and nothing imported (without --replace); a PEM file with a block that is no key or
    certificate, or an encrypted key: exit 2; a file that is neither PEM, DER nor a backup: exit 93.
    """

    /// Whether the file at `path` starts as a keychainfs backup does (read without the rest).
    static func isBackup(_ path: String) -> Bool {
        // One that cannot be opened goes to the backup import, which reports why.
        guard let fd = try? FileDescriptor.open(path, .readOnly) else { return true }
        defer { try? fd.close() }
        var head = [UInt8](repeating: 0, count: BackupFormat.magic.count)
        let n = (try? head.withUnsafeMutableBytes { try fd.read(into: $0) }) ?? -1
        return n == head.count && head == BackupFormat.magic
    }

    package static func run(_ ctx: Context, _ material: KeyMaterial) throws -> Int32 {
        let positionals = ctx.args.positionals
        guard (1...2).contains(positionals.count) else { throw UsageError("import needs a FILE") }
        let file = positionals[0]
        if isBackup(file) { return try BackupVerbs.importBackup(ctx) }
        if ctx.args.has("-w") || ctx.args.has("-P") {
            throw UsageError("wrapped (encrypted) keys are not imported: decrypt the key first (openssl pkey -in FILE -out PLAIN)")
        }
        if ctx.args.has("-T") { throw UsageError("-T is not supported: access is by access group (--access-group GROUP)") }
        if ctx.args.has("--keep-newer") {
            throw UsageError("--keep-newer is for backups; keys and certificates already in the vault are replaced with --replace")
        }
        let replace = ctx.args.has("--replace")
        let type = ctx.args.value("-t") ?? "agg"
        guard ["pub", "priv", "cert", "agg"].contains(type) else {
            throw UsageError("-t takes pub, priv, cert or agg\(type == "session" ? "; session (symmetric) keys are not supported" : "")")
        }
        if let format = ctx.args.value("-f"), !["openssl", "pkcs8", "x509", "pemseq"].contains(format) {
            throw UsageError("-f \(format) is not supported; PEM and DER keys and certificates are read (openssl, pkcs8, x509, pemseq)")
        }
        let vault = Paths.canonical(ctx.args.value("-k") ?? (positionals.count == 2 ? positionals[1] : Paths.defaultVault()))
        let bytes: SecureBytes
        switch readSecretFile(file) {
        case .success(let b): bytes = b
        case .failure(let why):
            throw StateError(message: "cannot read \(file): \(why)", status: .io)
        }
        defer { bytes.wipe() }
        let objects: [FileObject]
        do {
            objects = try material.read(bytes)
        } catch let refusal as FileRefusal where refusal.unrecognised {
            return try BackupVerbs.importBackup(ctx)  // exit 93: no backup, nor a key or certificate file
        } catch let refusal as FileRefusal {
            throw UsageError("nothing was imported: \(file) is not a key or certificate file the keychain takes: \(refusal.reason)")
        }
        let wanted: (FileObject) -> Bool = { object in
            switch (type, object) {
            case ("agg", _), ("cert", .certificate): return true
            case ("priv", .key(let k)): return k.isPrivate
            case ("pub", .key(let k)): return !k.isPrivate
            default: return false
            }
        }
        guard objects.allSatisfy(wanted) else {
            throw UsageError("nothing was imported: \(file) holds \(describe(objects)), not only what -t \(type) names")
        }
        let adds = try items(objects, file: file, ctx: ctx)
        let client = try Engine.connect(vault)
        var added: [[UInt8]] = []
        var replaced = 0
        do {
            for ((attributes, secret), object) in zip(adds, objects) {
                var query = attributes
                query[.returnPersistentRef] = true
                do {
                    let response = try client.send(Request(.add, query: query, secrets: [secret]))
                    if case .value(.persistentRef(let ref)) = response.result { added.append(ref) }
                } catch KeychainStatus.duplicateItem where replace {
                    try self.replace(object, attributes, secret, client: client)
                    replaced += 1
                }
            }
        } catch {
            // All or nothing, as the backup import: take back what this file added (an item
            // it replaced stays replaced).
            for ref in added {
                _ = try? client.send(Request(.delete, query: [.valuePersistentRef: .data(ref), .synchronizable: .synchronizableAny]))
            }
            Terminal.warn("nothing was imported from \(file)" + (replaced > 0 ? " (\(replaced) replaced item(s) stay replaced)" : ""))
            throw error
        }
        Terminal.writeString(1, summary(objects) + (replaced > 0 ? "\(replaced) \(replaced == 1 ? "item" : "items") replaced.\n" : ""))
        return 0
    }

    /// `import --replace`: the item `attributes` collided with takes the file's secret and the
    /// attributes this command gives it (label, extractability, access group). The same key is
    /// the same application label (`klbl`) and key class; the same certificate, the same DER.
    /// - Throws: errSecDuplicateItem, explained, when the colliding item is not that one (a
    ///   certificate of the same issuer and serial number with other contents); `UsageError`
    ///   when items in several access groups match (name one with --access-group).
    static func replace(_ object: FileObject, _ attributes: Attributes, _ secret: SecureBytes, client: DaemonClient) throws {
        var query: Attributes = [.class: attributes[.class]!, .matchLimit: .matchLimitAll,
                                 .returnAttributes: .bool(true), .returnPersistentRef: .bool(true)]
        if let group = attributes[.accessGroup] { query[.accessGroup] = group }
        let what: String
        switch object {
        case .key(let key):
            query[.keyClass] = .number(key.isPrivate ? 1 : 0)
            query[.applicationLabel] = .data(key.applicationLabel)
            what = key.isPrivate ? "private key" : "public key"
        case .certificate(_, let info):
            if let hash = info.publicKeyHash { query[.publicKeyHash] = .data(hash) }
            query[.returnData] = .bool(true)
            what = "certificate"
        }
        var found: [FoundItem]
        do {
            found = try client.send(Request(.copyMatching, query: query)).result.array?.compactMap(\.item) ?? []
        } catch KeychainStatus.itemNotFound {
            found = []
        }
        if case .certificate(let der, _) = object {
            found = found.filter { item in item.secret?.withUnsafeBytes { Array($0) == der } ?? false }
        }
        guard found.count <= 1 else {
            let groups = found.compactMap { $0.attributes[.accessGroup]?.stringValue }.sorted()
            throw UsageError("\(found.count) items match the \(what) (groups: \(groups.joined(separator: ", "))); name one with --access-group")
        }
        guard let ref = found.first?.persistentRef else {
            throw StateError.explained(.duplicateItem, "a \(what) of the same issuer and serial number, with other contents, is in the vault: "
                                       + "delete it first (keychainfs delete-certificate -Z SHA1)")
        }
        var changes = attributes
        changes[.class] = nil
        for key in ItemClass.key.primaryKey + ItemClass.certificate.primaryKey { changes[key] = nil }
        try client.send(Request(.update, query: [.class: attributes[.class]!, .valuePersistentRef: .data(ref)],
                                changes: changes, secrets: [secret]))
    }

    /// The add query and secret of each object, labelled as `security import` labels them.
    /// - Throws: `allocate` when guarded memory for a certificate's copy runs out.
    static func items(_ objects: [FileObject], file: String, ctx: Context) throws -> [(Attributes, SecureBytes)] {
        let given = ctx.args.value("-l")
        var certificateLabels: [[UInt8]: String] = [:]
        for case .certificate(_, let info) in objects {
            if let hash = info.publicKeyHash, let summary = info.summary { certificateLabels[hash] = summary }
        }
        return try objects.map { object in
            var attributes: Attributes
            let secret: SecureBytes
            switch object {
            case .certificate(let der, _):
                attributes = [.class: .itemClass(.certificate)]
                secret = try SecureBytes(copying: der)
            case .key(let key):
                attributes = key.attributes
                attributes[.label] = .string(certificateLabels[key.applicationLabel] ?? baseName(file))
                if key.isPrivate && ctx.args.has("-x") { attributes[.isExtractable] = .bool(false) }
                secret = key.bytes
            }
            if let given { attributes[.label] = .string(given) }
            if let group = ctx.args.value("--access-group") { attributes[.accessGroup] = .string(group) }
            return (attributes, secret)
        }
    }

    /// `security`'s lines: identities (a private key with its certificate), keys, certificates.
    static func summary(_ objects: [FileObject]) -> String {
        var privateLabels = Set<[UInt8]>()
        for case .key(let k) in objects where k.isPrivate { privateLabels.insert(k.applicationLabel) }
        var paired = Set<[UInt8]>()
        var certificates = 0
        for case .certificate(_, let info) in objects {
            if let hash = info.publicKeyHash, privateLabels.contains(hash), !paired.contains(hash) { paired.insert(hash) } else { certificates += 1 }
        }
        var keys = 0
        for case .key(let k) in objects where !(k.isPrivate && paired.contains(k.applicationLabel)) { keys += 1 }
        var out = ""
        if !paired.isEmpty { out += "\(paired.count) \(paired.count == 1 ? "identity" : "identities") imported.\n" }
        if keys > 0 { out += "\(keys) \(keys == 1 ? "key" : "keys") imported.\n" }
        if certificates > 0 { out += "\(certificates) \(certificates == 1 ? "certificate" : "certificates") imported.\n" }
        return out
    }

    static func describe(_ objects: [FileObject]) -> String {
        var kinds: [String] = []
        for o in objects {
            let kind: String
            switch o {
            case .certificate: kind = "a certificate"
            case .key(let k): kind = k.isPrivate ? "a private key" : "a public key"
            }
            if !kinds.contains(kind) { kinds.append(kind) }
        }
        return kinds.joined(separator: " and ")
    }

    /// `dir/server.key.pem` -> `server.key`: the name macOS gives an imported key without a certificate.
    static func baseName(_ path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// A key or certificate file, read into guarded memory (it may hold a private key).
    struct ReadFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
        init(_ errno: Errno) { description = errno.description }
    }

    static func readSecretFile(_ path: String, limit: Int = 4 << 20) -> Result<SecureBytes, ReadFailure> {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, .readOnly) } catch { return .failure(ReadFailure(error)) }
        defer { try? fd.close() }
        let st: FileStatus
        do { st = try fd.status() } catch { return .failure(ReadFailure(error)) }
        guard st.kind == .regular else { return .failure(ReadFailure("not a regular file")) }
        guard st.size <= limit else { return .failure(ReadFailure("larger than \(limit >> 20) MiB")) }
        guard let buffer = try? SecureBytes(count: Int(st.size)) else { return .failure(ReadFailure(KeychainStatus.allocate.message)) }
        let done: Int
        do { done = try buffer.withUnsafeMutableBytes { try fd.readAll(into: $0) } } catch {
            buffer.wipe()
            return .failure(ReadFailure(Errno(error)))
        }
        guard done == buffer.count else {
            buffer.wipe()
            return .failure(ReadFailure("it changed while being read"))
        }
        return .success(buffer)
    }
}
