import KeychainClient
import KeychainCore
import KeychainCrypto
import KeychainProtocol

/// `find-certificate` and `find-identity`, with macOS `security` flags and output. Declared
/// here; their bodies need libcrypto (`KeyMaterial`) and run in `keychainfs-daemon`.
package enum CertificateVerbs {
    static let all: [Verb] = [findCertificate, findIdentity]

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
    static func certificates(_ client: DaemonClient, _ material: KeyMaterial) throws -> [Found] {
        let query: Attributes = ["class": "cert", "sync": "syna", "m_Limit": "m_LimitAll", "r_Attributes": true, "r_Data": true]
        let response: Response
        do { response = try client.send(Request(.copyMatching, query: query)) } catch KeychainStatus.itemNotFound { return [] }
        return (response.result.array ?? []).compactMap { value in
            guard let item = value.item else { return nil }
            let der = item.secret?.withUnsafeBytes { Array($0) } ?? []
            return Found(attributes: item.attributes, der: der, info: material.certificate(der))
        }
    }

    package static func findCertificate(_ ctx: Context, _ material: KeyMaterial) throws -> Int32 {
        try ctx.checkPositionals()
        let name = ctx.args.value("-c"), email = ctx.args.value("-e")?.lowercased()
        var found = try certificates(try ctx.client(), material).filter { c in
            if let name {
                let label = c.attributes["labl"]?.stringValue ?? ""
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
                    Terminal.warn("the item's data is not a DER certificate; it has no PEM form")
                    return KeychainStatus.decode.exitCode
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
            let label = c.attributes["labl"]?.stringValue ?? c.info?.summary ?? ""
            let why = reason ? (c.info?.invalidReason ?? "").isEmpty ? "" : " (\(c.info!.invalidReason!))" : ""
            return "  \(i + 1)) \(hash) \"\(label)\"\(why)\n"
        }
        if ctx.json {
            let items = identities.map { c -> String in
                let hash = Hex.encode(material.digest(c.der, sha256: false)).uppercased()
                let label = c.attributes["labl"]?.stringValue ?? c.info?.summary ?? ""
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

    /// The certificates whose private key (`kcls` 1, `klbl` equal to the certificate's `pkhh`)
    /// the caller can see: the join Apple's securityd makes for `kSecClassIdentity`.
    static func identities(_ client: DaemonClient, _ material: KeyMaterial) throws -> [Found] {
        let query: Attributes = ["class": "keys", "kcls": 1, "sync": "syna", "m_Limit": "m_LimitAll", "r_Attributes": true]
        var labels = Set<[UInt8]>()
        do {
            for value in try client.send(Request(.copyMatching, query: query)).result.array ?? [] {
                if case .data(let klbl)? = value.item?.attributes["klbl"] { labels.insert(klbl) }
            }
        } catch KeychainStatus.itemNotFound {
            return []
        }
        return try certificates(client, material).filter { c in
            guard case .data(let pkhh)? = c.attributes["pkhh"] else { return false }
            return labels.contains(pkhh)
        }
    }
}
