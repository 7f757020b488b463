import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol

/// `export` in macOS `security`'s form (`-t certs|pubKeys ... -f pemseq -o FILE`): certificates
/// and public keys as PEM or DER. Private keys are never written: a non-extractable one is
/// refused with errSecDataNotAvailable, as macOS's `SecItemExport` refuses it, and an
/// extractable one with errSecPassphraseRequired, since macOS exports private keys only
/// wrapped under a passphrase (PKCS#12, wrapped PKCS#8), which is not offered here.
package enum ExportVerbs {
    static let valued: Set<String> = ["-k", "-t", "-f", "-o", "-P", "-l"]
    static let flags: Set<String> = ["-p", "-w"]

    static let details = """
    Certificates and public keys (as macOS security export), when --out is not given:
      -k VAULT     the vault to export from (as the trailing VAULT)
      -t TYPE      certs, pubKeys, privKeys, allKeys, identities or all (the default)
      -f FORMAT    pemseq (the default: every item as PEM, one after the other), x509 (one
                   certificate) or openssl (one certificate, or one public key as
                   SubjectPublicKeyInfo); x509 and openssl write DER unless -p is given
      -p           PEM for x509 and openssl
      -l LABEL     only the items of this label
      -o FILE      write FILE (mode 0600, replaced atomically) instead of standard output
    pubKeys is every public key item and the public half of every private key without one,
    as `openssl pkey -pubout` writes it. A type that takes private keys (privKeys, allKeys,
    identities, all) exits 28 (errSecDataNotAvailable) when a matching private key is
    non-extractable, else 84 (errSecPassphraseRequired): private keys are not exported (-w,
    -P and pkcs12 are not supported; an extractable key is in the mount's /.keys). Nothing
    matching: exit 44.
    """

    /// The macOS form: any of its flags, and not the backup's `--out`.
    static func isMacOSForm(_ ctx: Context) -> Bool {
        !ctx.args.has("--out") && (valued.union(flags)).contains { ctx.args.has($0) }
    }

    /// The engine's `export`: the macOS form here, a backup (`--out`) as `BackupVerbs.export`.
    package static func run(_ ctx: Context, _ material: KeyMaterial) throws -> Int32 {
        guard isMacOSForm(ctx) else { return try BackupVerbs.export.body!(ctx) }
        try ctx.checkPositionals()
        if ctx.args.has("-w") || ctx.args.has("-P") {
            throw UsageError("wrapped export (-w, -P) is not supported: private keys are not exported")
        }
        let type = ctx.args.value("-t") ?? "all"
        guard ["certs", "pubKeys", "privKeys", "allKeys", "identities", "all"].contains(type) else {
            throw UsageError("-t takes certs, pubKeys, privKeys, allKeys, identities or all")
        }
        let format = ctx.args.value("-f") ?? "pemseq"
        guard ["pemseq", "x509", "openssl"].contains(format) else {
            throw UsageError("-f \(format) is not supported; -f takes pemseq, x509 or openssl")
        }
        if format == "x509" && type != "certs" { throw UsageError("-f x509 holds certificates: give -t certs") }
        let label = ctx.args.value("-l")
        let client = try Engine.connect(Paths.canonical(ctx.args.value("-k") ?? ctx.vault))
        func search(_ query: Attributes) throws -> [FoundItem] {
            var q = query
            q[.synchronizable] = .synchronizableAny
            q[.matchLimit] = .matchLimitAll
            q[.returnAttributes] = true
            if let label { q[.label] = .string(label) }
            do {
                return (try client.send(Request(.copyMatching, query: q)).result.array ?? []).compactMap(\.item)
            } catch KeychainStatus.itemNotFound {
                return []
            }
        }
        let privateKeys = try search([.class: .itemClass(.key), .keyClass: 1])
        if type != "certs" && type != "pubKeys" && !privateKeys.isEmpty {
            let sealed = privateKeys.contains { $0.attributes[.isExtractable].map { !KeyObjectFlags.isTrue($0) } ?? false }
            let status: KeychainStatus = sealed ? .dataNotAvailable : .passphraseRequired
            throw StateError.explained(status, sealed ? "a matching private key is non-extractable: it never leaves the keychain"
                                 : "private keys are not exported (no PKCS#12 or wrapped export); read an extractable key from the mount's /.keys, or give -t certs or -t pubKeys")
        }
        var pieces: [(pem: [UInt8], der: [UInt8])] = []
        // identities: every identity has a private key, refused above; none is left to export.
        if type == "certs" || type == "all" {
            for item in try search([.class: .itemClass(.certificate), .returnData: true]) {
                let der = item.secret?.withUnsafeBytes { Array($0) } ?? []
                guard let info = material.certificate(der) else {
                    Terminal.warn("skipping a certificate item whose data is not a DER certificate")
                    continue
                }
                pieces.append((info.pem, der))
            }
        }
        if ["pubKeys", "allKeys", "all"].contains(type) {
            let publicKeys = try search([.class: .itemClass(.key), .keyClass: 0])
            let own = Set(publicKeys.compactMap { item -> [UInt8]? in
                if case .data(let l)? = item.attributes[.applicationLabel] { return l }
                return nil
            })
            let halves = type == "pubKeys" ? privateKeys.filter { item in
                guard case .data(let l)? = item.attributes[.applicationLabel] else { return true }
                return !own.contains(l)
            } : []
            for item in publicKeys + halves {
                guard case .data(let pub)? = item.attributes[ItemClass.publicKeyAttribute],
                      let keyType = item.attributes[.keyType].flatMap(KeyObjectFlags.number),
                      let pem = try? material.subjectPublicKeyInfo(type: keyType, apple: pub, pem: true),
                      let der = try? material.subjectPublicKeyInfo(type: keyType, apple: pub, pem: false) else {
                    Terminal.warn("skipping a key item without a readable public key")
                    continue
                }
                pieces.append((pem, der))
            }
        }
        guard !pieces.isEmpty else { throw KeychainStatus.itemNotFound }
        let bytes: [UInt8]
        if format == "pemseq" {
            bytes = pieces.flatMap(\.pem)
        } else {
            guard pieces.count == 1 else {
                throw UsageError("-f \(format) holds one item and \(pieces.count) match; give -f pemseq or -l LABEL")
            }
            bytes = ctx.args.has("-p") ? pieces[0].pem : pieces[0].der
        }
        if let out = ctx.args.value("-o") {
            if let failure = BackupVerbs.writeAtomically(bytes, to: out) {
                throw StateError(message: "cannot write \(out): \(failure)", status: .io)
            }
        } else {
            bytes.withUnsafeBytes { Terminal.writeAll(1, $0) }
        }
        return 0
    }
}

/// Reading the numbers and booleans of key attributes, stored as numbers or strings.
enum KeyObjectFlags {
    static func isTrue(_ v: AttributeValue) -> Bool {
        switch v {
        case .bool(let b): return b
        case .number(let n): return n != 0
        case .string(let s): return s == "1" || s == "true"
        default: return true
        }
    }

    static func number(_ v: AttributeValue) -> Int64? {
        switch v {
        case .number(let n): return n
        case .string(let s): return Int64(s)
        default: return nil
        }
    }
}
