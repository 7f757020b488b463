import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol

/// `find-certificate` and `find-identity`, with macOS `security` flags and output. Declared
/// here; their bodies need libcrypto (`KeyMaterial`) and run in `keychainfs-daemon`.
package enum CertificateVerbs {
    static let all: [Verb] = [findCertificate, findIdentity, deleteCertificate, deleteIdentity]

    static let findCertificate = Verb(
        name: "find-certificate", usage: "[-a] [-c NAME] [-e EMAIL] [-m] [-p] [-Z] [--json] [VAULT]",
        summary: "Find a certificate item (-a: every matching one) and print it.",
        valued: ["-c", "-e"], flags: ["-a", "-m", "-p", "-Z"],
        details: """
          -a           print every matching certificate, not only the first
          -c NAME      match certificates whose label or subject common name contains NAME
          -e EMAIL     match certificates holding the e-mail address EMAIL (subject or
                       alternative names; case-insensitive)
          -m           print the certificate's e-mail addresses
          -p           print the certificate as PEM (instead of its attributes)
          -Z           print the certificate's SHA-256 and SHA-1 hashes
          --json       one JSON array of {attributes, sha1, sha256, emails[, pem]}
        No match: exit 44.
        """
    )

    static let findIdentity = Verb(
        name: "find-identity", usage: "[-p POLICY] [-s STRING] [-v] [--json] [VAULT]",
        summary: "List identities: certificates whose private key is in the keychain.",
        valued: ["-p", "-s"], flags: ["-v"],
        details: """
          -v           valid identities only: now is inside the certificate's validity period
          -p POLICY    accepted (basic, ssl-client, ssl-server, smime, eap, ipsec, ichat,
                       codesigning, sys-default, sys-kerberos-kdc, macappstore) and not
                       evaluated: there is no trust store; validity is the period only
          -s STRING    accepted and ignored (the policy's host name or e-mail address)
        Each line is "  N) SHA-1 \\"label\\"", as security prints it. None found is not an error.
        """
    )

    static let deleteCertificate = Verb(
        name: "delete-certificate", usage: "-c NAME | -Z SHA1 [-t] [VAULT]",
        summary: "Delete one certificate, named by its common name or its SHA-1 hash.",
        valued: ["-c", "-Z"], flags: ["-t"],
        details: """
          -c NAME      the certificate whose label or subject common name contains NAME; it
                       must be the only one (exit 2 otherwise: give -Z)
          -Z SHA1      the certificate with this SHA-1 hash (hex, as find-certificate -Z prints it)
          -t           accepted: there are no trust settings to delete
        The private key stays (delete-identity deletes both). No match: exit 44.
        """
    )

    static let deleteIdentity = Verb(
        name: "delete-identity", usage: "-c NAME | -Z SHA1 [-t] [VAULT]",
        summary: "Delete one identity: its certificate and its private key.",
        valued: ["-c", "-Z"], flags: ["-t"],
        details: """
          -c NAME      the identity whose certificate's label or common name contains NAME; it
                       must be the only one (exit 2 otherwise: give -Z)
          -Z SHA1      the identity whose certificate has this SHA-1 hash
          -t           accepted: there are no trust settings to delete
        The private key is kept when another certificate still names it. No match: exit 44.
        """
    )

    /// The policies `security find-identity -p` names.
    static let policies: Set<String> = ["basic", "ssl-client", "ssl-server", "smime", "eap", "ipsec", "ichat",
                                        "codesigning", "sys-default", "sys-kerberos-kdc", "macappstore"]

    /// A certificate item found, with what its DER says.
    struct Found {
        var attributes: Attributes
        var der: [UInt8]
        var info: CertificateInfo?
    }

    /// Every certificate item the caller can read, with its DER, in insertion order.
    static func certificates(_ client: DaemonClient, _ material: KeyMaterial, withReferences: Bool = false) throws -> [Found] {
        var query: Attributes = [.class: .itemClass(.certificate), .synchronizable: .synchronizableAny, .matchLimit: .matchLimitAll, .returnAttributes: true, .returnData: true]
        if withReferences { query[.returnPersistentRef] = true }
        let response: Response
        do { response = try client.send(Request(.copyMatching, query: query)) } catch KeychainStatus.itemNotFound { return [] }
        return (response.result.array ?? []).compactMap { value in
            guard let item = value.item else { return nil }
            let der = item.secret?.withUnsafeBytes { Array($0) } ?? []
            var attributes = item.attributes
            if let ref = item.persistentRef { attributes[referenceKey] = .data(ref) }
            return Found(attributes: attributes, der: der, info: material.certificate(der))
        }
    }

    package static func findCertificate(_ ctx: Context, _ material: KeyMaterial) throws -> Int32 {
        try ctx.checkPositionals()
        let name = ctx.args.value("-c"), email = ctx.args.value("-e")?.lowercased()
        var found = try certificates(try ctx.client(), material).filter { c in
            if let name {
                let label = c.attributes[.label]?.stringValue ?? ""
                guard label.contains(name) || (c.info?.commonName ?? "").contains(name) else { return false }
            }
            if let email {
                guard c.info?.emailAddresses.contains(where: { $0.lowercased() == email }) == true else { return false }
            }
            return true
        }
        guard !found.isEmpty else { throw KeychainStatus.itemNotFound }
        if !ctx.args.has("-a") { found = [found[0]] }
        var json: [String] = []
        for c in found {
            let sha1 = Hex.encode(material.digest(c.der, sha256: false)).uppercased()
            let sha256 = Hex.encode(material.digest(c.der, sha256: true)).uppercased()
            let emails = c.info?.emailAddresses ?? []
            let pem = c.info.map { String(decoding: $0.pem, as: UTF8.self) }
            if ctx.json {
                var obj = "{\"attributes\":\(Output.json(c.attributes)),\"sha1\":\"\(sha1)\",\"sha256\":\"\(sha256)\""
                obj += ",\"emails\":[" + emails.map(Output.jsonString).joined(separator: ",") + "]"
                if ctx.args.has("-p") { obj += ",\"pem\":" + (pem.map(Output.jsonString) ?? "null") }
                json.append(obj + "}")
                continue
            }
            var out = ""
            if ctx.args.has("-Z") { out += "SHA-256 hash: \(sha256)\nSHA-1 hash: \(sha1)\n" }
            if !ctx.args.has("-p") { out += Output.itemText(vault: ctx.vault, attributes: c.attributes) }
            if ctx.args.has("-m") { out += "email addresses: " + emails.joined(separator: ", ") + "\n" }
            if ctx.args.has("-p") {
                guard let pem else {
                    Terminal.writeString(1, out)
                    throw StateError(message: "the item's data is not a DER certificate; it has no PEM form", status: .decode)
                }
                out += pem
            }
            Terminal.writeString(1, out)
        }
        if ctx.json { Terminal.writeString(1, "[" + json.joined(separator: ",") + "]\n") }
        return 0
    }

    package static func findIdentity(_ ctx: Context, _ material: KeyMaterial) throws -> Int32 {
        try ctx.checkPositionals()
        for policy in ctx.args.all("-p") where !policies.contains(policy) {
            throw UsageError("unknown policy \(Output.jsonString(policy)); -p takes \(policies.sorted().joined(separator: ", "))")
        }
        let client = try ctx.client()
        let identities = try identities(client, material)
        let valid = identities.filter { $0.info?.invalidReason == nil }
        func line(_ i: Int, _ c: Found, reason: Bool) -> String {
            let hash = Hex.encode(material.digest(c.der, sha256: false)).uppercased()
            let label = c.attributes[.label]?.stringValue ?? c.info?.summary ?? ""
            let why = reason ? (c.info?.invalidReason ?? "").isEmpty ? "" : " (\(c.info!.invalidReason!))" : ""
            return "  \(i + 1)) \(hash) \"\(label)\"\(why)\n"
        }
        if ctx.json {
            let items = identities.map { c -> String in
                let hash = Hex.encode(material.digest(c.der, sha256: false)).uppercased()
                let label = c.attributes[.label]?.stringValue ?? c.info?.summary ?? ""
                return "{\"sha1\":\"\(hash)\",\"label\":\(Output.jsonString(label)),\"valid\":\(c.info?.invalidReason == nil)}"
            }
            Terminal.writeString(1, "[" + items.joined(separator: ",") + "]\n")
            return 0
        }
        var out = ""
        if !ctx.args.has("-v") {
            out += "  Matching identities\n"
            for (i, c) in identities.enumerated() { out += line(i, c, reason: true) }
            out += "     \(identities.count) identities found\n\n  Valid identities only\n"
        }
        for (i, c) in valid.enumerated() { out += line(i, c, reason: false) }
        out += "     \(valid.count) valid identities found\n"
        Terminal.writeString(1, out)
        return 0
    }

    package static func deleteCertificate(_ ctx: Context, _ material: KeyMaterial) throws -> Int32 {
        let client = try ctx.client()
        let c = try uniqueMatch(ctx, try certificates(client, material, withReferences: true), material)
        try deleteItem(client, c.attributes)
        return 0
    }

    package static func deleteIdentity(_ ctx: Context, _ material: KeyMaterial) throws -> Int32 {
        let client = try ctx.client()
        let c = try uniqueMatch(ctx, try identities(client, material, withReferences: true), material)
        try deleteItem(client, c.attributes)
        guard case .data(let pkhh)? = c.attributes[.publicKeyHash] else { return 0 }
        // As Apple's explode_identity: the key goes unless another certificate names it.
        do {
            _ = try client.send(Request(.copyMatching, query: [.class: .itemClass(.certificate), .publicKeyHash: .data(pkhh), .synchronizable: .synchronizableAny]))
        } catch KeychainStatus.itemNotFound {
            try client.send(Request(.delete, query: [.class: .itemClass(.key), .keyClass: 1, .applicationLabel: .data(pkhh), .synchronizable: .synchronizableAny]))
        }
        return 0
    }

    /// The one certificate of `found` that `-c` or `-Z` names, as `security delete-certificate`
    /// wants it: uniquely.
    static func uniqueMatch(_ ctx: Context, _ found: [Found], _ material: KeyMaterial) throws -> Found {
        try ctx.checkPositionals()
        let name = ctx.args.value("-c"), hash = ctx.args.value("-Z")?.uppercased()
        guard name != nil || hash != nil else { throw UsageError("give -c NAME or -Z SHA1") }
        let matches = found.filter { c in
            if let name {
                let label = c.attributes[.label]?.stringValue ?? ""
                guard label.contains(name) || (c.info?.commonName ?? "").contains(name) else { return false }
            }
            if let hash { guard Hex.encode(material.digest(c.der, sha256: false)).uppercased() == hash else { return false } }
            return true
        }
        guard let first = matches.first else { throw KeychainStatus.itemNotFound }
        guard matches.count == 1 else {
            throw UsageError("-c \(Output.jsonString(name ?? "")) matches \(matches.count) certificates; name one with -Z SHA1 (find-certificate -a -Z)")
        }
        return first
    }

    /// Deletes the item a search returned with its persistent reference (`pref`).
    static func deleteItem(_ client: DaemonClient, _ attributes: Attributes) throws {
        guard case .data(let ref)? = attributes[referenceKey] else { throw KeychainStatus.decode }
        try client.send(Request(.delete, query: [.valuePersistentRef: .data(ref), .synchronizable: .synchronizableAny]))
    }

    /// Where `certificates(_:_:withReferences:)` keeps an item's persistent reference.
    static let referenceKey = AttributeKey.valuePersistentRef

    /// The certificates whose private key (`kcls` 1, `klbl` equal to the certificate's `pkhh`)
    /// the caller can see: the join Apple's securityd makes for `kSecClassIdentity`.
    static func identities(_ client: DaemonClient, _ material: KeyMaterial, withReferences: Bool = false) throws -> [Found] {
        let query: Attributes = [.class: .itemClass(.key), .keyClass: 1, .synchronizable: .synchronizableAny, .matchLimit: .matchLimitAll, .returnAttributes: true]
        var labels = Set<[UInt8]>()
        do {
            for value in try client.send(Request(.copyMatching, query: query)).result.array ?? [] {
                if case .data(let klbl)? = value.item?.attributes[.applicationLabel] { labels.insert(klbl) }
            }
        } catch KeychainStatus.itemNotFound {
            return []
        }
        return try certificates(client, material, withReferences: withReferences).filter { c in
            guard case .data(let pkhh)? = c.attributes[.publicKeyHash] else { return false }
            return labels.contains(pkhh)
        }
    }
}
