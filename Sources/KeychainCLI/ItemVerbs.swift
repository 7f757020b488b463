import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol

/// The item verbs, with macOS `security` flags.
enum ItemVerbs {
    static let all: [Verb] = [
        add(.genericPassword), find(.genericPassword), delete(.genericPassword),
        add(.internetPassword), find(.internetPassword), delete(.internetPassword), dump,
    ]

    static func noun(_ c: ItemClass) -> String { c == .genericPassword ? "generic-password" : "internet-password" }

    /// Flags that name attributes, per class: flag -> attribute key.
    static func attributeFlags(_ c: ItemClass) -> [String: AttributeKey] {
        var common: [String: AttributeKey] = ["-a": .account, "-l": .label, "-j": .comment, "-D": .description,
                                              "-c": .creator, "-C": .type]
        if c == .genericPassword {
            common["-s"] = .service
            common["-G"] = .generic
        } else {
            common["-s"] = .server; common["-r"] = .protocol; common["-P"] = .port; common["-p"] = .path
            common["-d"] = .securityDomain; common["-t"] = .authenticationType
        }
        return common
    }

    static func classDetails(_ c: ItemClass) -> String {
        let common = """
          -a ACCOUNT   account            -l LABEL     label
          -j COMMENT   comment            -D KIND      kind (description)
          -c CREATOR   creator            -C TYPE      type
          --access-group GROUP            one of your entitled access groups
        """
        if c == .genericPassword { return "  -s SERVICE   service            -G VALUE     generic attribute\n" + common }
        return """
          -s SERVER    server             -r PROTOCOL  protocol (four characters, e.g. htps)
          -P PORT      port               -p PATH      path
          -d DOMAIN    security domain    -t AUTHTYPE  authentication type (e.g. dflt)

        """ + common
    }

    /// The query or attributes named by the flags given.
    /// - Throws: `UsageError` for a port that is not a number from 0 to 65535, or a protocol,
    ///   authentication type, creator or type that is not a four-character code.
    static func attributes(_ ctx: Context, _ c: ItemClass) throws -> Attributes {
        var out: Attributes = [.class: .string(c.rawValue)]
        for (flag, key) in attributeFlags(c) {
            if let v = ctx.args.value(flag) { out[key] = .string(v) }
        }
        for (flag, what) in fourCharFlags(c) {
            if let code = try ctx.args.fourCharCode(flag, what: what) { out[attributeFlags(c)[flag]!] = .string(code) }
        }
        if c == .internetPassword, let port = try ctx.args.number("-P", in: SettingLimits.port, unit: "a port number") {
            out[.port] = .string(String(port))
        }
        if let g = ctx.args.value("--access-group") { out[.accessGroup] = .string(g) }
        return out
    }

    /// The flags that take a four-character code, as `security` documents them.
    static func fourCharFlags(_ c: ItemClass) -> [String: String] {
        var codes = ["-c": "a creator code", "-C": "a type code"]
        if c == .internetPassword {
            codes["-r"] = "a protocol code"
            codes["-t"] = "an authentication type code"
        }
        return codes
    }

    /// True when at least one flag names an item attribute (`--access-group` alone does not).
    static func namesAnAttribute(_ ctx: Context, _ c: ItemClass) -> Bool {
        attributeFlags(c).keys.contains { ctx.args.has($0) }
    }

    static func add(_ c: ItemClass) -> Verb {
        Verb(
            name: "add-\(noun(c))",
            usage: "[-s ...] [-a ACCOUNT] -w PASSWORD|-|@PATH | --secret-file PATH | -X HEX [-U] [--accessible CLASS] [--synchronizable] [...] [VAULT]",
            summary: "Add \(c == .genericPassword ? "a generic" : "an internet") password (-U updates an existing one).",
            // -p is security's legacy spelling of -w PASSWORD for generic passwords (a path for internet ones).
            valued: Set(attributeFlags(c).keys).union(["--accessible", "--access-group", "--access-control", "-X", "-T", "--secret-file"]
                                                      + (c == .genericPassword ? ["-p"] : [])),
            flags: ["-U", "--synchronizable", "-A"], optionalValue: ["-w"],
            details: classDetails(c) + """

              -w PASSWORD  the secret; "-w -" reads it from standard input (one trailing newline is
                           dropped); -w last on the line asks for it without echo
              --secret-file PATH, -w @PATH  the file's exact bytes (a PEM keeps its last
                           newline; a pipe such as <(command) is read too). A secret that
                           itself begins with @ is given with "-w -" or -X
              -X HEX       the secret as hexadecimal digits (either case, an even number)\(c == .genericPassword ? "\n  -p PASSWORD  the same as -w PASSWORD (security's legacy option)" : "")
                           Use of -w PASSWORD\(c == .genericPassword ? ", -p" : "") or -X is insecure: the command line is visible
                           to other users. Prefer "-w -" or -w last on the line.
              without -l the label is the \(c == .genericPassword ? "service" : "server") (-s), as security sets it
              -U           update the item of this name if there is one, in the access group it is
                           in (GROUP's only, with --access-group); none: add it; items of this
                           name in several groups: exit 2, nothing changed
              -T APP       a program that may use the item (repeatable): the item goes into the
                           access group trusted-HASH whose --exe list is these programs and
                           keychainfs itself, made if missing (-T "" is not offered)
              -A           any program of a caller entitled to the group (the default here)
              --accessible CLASS  protection class: Apple's name (WhenUnlocked, AfterFirstUnlock,
                           Always, ...ThisDeviceOnly, WhenPasscodeSetThisDeviceOnly) or raw (ak, cku, ...)
              --synchronizable    mark the item synchronizable (sync=1)
              --access-control FLAGS  comma-separated SecAccessControl flags: userPresence,
                           biometryAny, biometryCurrentSet, devicePasscode, watch, or, and;
                           reading the secret then needs the approval program's consent
            """
        ) { ctx in
            try ctx.checkPositionals()
            var attrs = try attributes(ctx, c)
            // An item with neither service nor account could never be named again.
            guard ctx.args.has("-s") || ctx.args.has("-a") else {
                throw UsageError("add-\(noun(c)) needs -s \(c == .genericPassword ? "SERVICE" : "SERVER") or -a ACCOUNT")
            }
            if let a = ctx.args.value("--accessible") {
                guard let p = ProtectionClass(name: a) else { throw UsageError("unknown protection class \(a)") }
                attrs[.accessible] = .string(p.rawValue)
            }
            if ctx.args.has("--synchronizable") { attrs[.synchronizable] = .bool(true) }
            // As security: without -l the label is the service (the server for internet passwords).
            let nameKey: AttributeKey = c == .genericPassword ? .service : .server
            if attrs[.label] == nil, let name = attrs[nameKey] { attrs[.label] = name }
            if let list = ctx.args.value("--access-control") {
                let names: [String: UInt64] = [
                    "userPresence": AccessControl.userPresence, "biometryAny": AccessControl.biometryAny,
                    "biometryCurrentSet": AccessControl.biometryCurrentSet, "devicePasscode": AccessControl.devicePasscode,
                    "watch": AccessControl.companion, "or": AccessControl.or, "and": AccessControl.and,
                ]
                var flags: UInt64 = 0
                let parts = list.split(separator: ",", omittingEmptySubsequences: false)
                guard !parts.contains(where: \.isEmpty) else {
                    throw UsageError("--access-control takes flags separated by commas, such as userPresence or biometryAny,or,devicePasscode")
                }
                for name in parts {
                    guard let bit = names[String(name)] else { throw UsageError("unknown access-control flag \(name)") }
                    flags |= bit
                }
                let protection = attrs[.accessible].flatMap { $0.stringValue }.flatMap(ProtectionClass.init(rawValue:)) ?? .default
                attrs[.accessControl] = AccessControl(protection: protection, flags: flags).value
            }
            let client = try ctx.client()
            if ctx.args.has("-T") {
                guard !ctx.args.has("-A"), !ctx.args.has("--access-group") else {
                    throw UsageError("-T chooses the access group: give it without -A or --access-group")
                }
                attrs[.accessGroup] = .string(try TrustedApplications.group(for: ctx.args.all("-T"), client: client))
            }
            // Found before the secret is asked for: an ambiguous name asks for nothing.
            let existing = ctx.args.has("-U") ? try itemToUpdate(attrs, c, client: client) : nil
            let secret = try readSecret(ctx, legacy: c == .genericPassword)
            guard let existing else {
                try client.send(Request(.add, query: attrs, secrets: [secret]))
                return 0
            }
            var changes = attrs
            for key in [.class] + c.primaryKey { changes[key] = nil }
            if !ctx.args.has("-l") { changes[.label] = nil }  // an update keeps the label it has
            try client.send(Request(.update, query: [.class: .string(c.rawValue), .valuePersistentRef: .data(existing)],
                                    changes: changes, secrets: [secret]))
            return 0
        }
    }

    /// The persistent reference of the item that `add -U` updates: the one whose primary key is
    /// the add's (missing attributes as empty, as the store counts them; `sync` as given), in
    /// whichever of the caller's access groups it lives, or only in the group `attrs` names
    /// (`--access-group`, `-T`). nil when there is none: the add goes ahead.
    /// - Throws: `UsageError` when items of that name live in several groups (nothing changes);
    ///   the search's status otherwise.
    static func itemToUpdate(_ attrs: Attributes, _ c: ItemClass, client: DaemonClient) throws -> [UInt8]? {
        var query: Attributes = [.class: .string(c.rawValue), .matchLimit: .matchLimitAll,
                                 .returnAttributes: .bool(true), .returnPersistentRef: .bool(true)]
        for key in c.primaryKey { query[key] = attrs[key] ?? AttributeKind.of(key).empty }
        for key in [AttributeKey.accessGroup, .synchronizable] { query[key] = attrs[key] }
        let found: [FoundItem]
        do {
            found = try client.send(Request(.copyMatching, query: query)).result.array?.compactMap(\.item) ?? []
        } catch KeychainStatus.itemNotFound {
            return nil
        }
        guard found.count <= 1 else {
            let named = nameWords(c).compactMap { key, word in attrs[key]?.stringValue.map { "\(word) \(Output.jsonString($0))" } }
            let groups = found.compactMap { $0.attributes[.accessGroup]?.stringValue }.sorted()
            throw UsageError("\(found.count) items match \(named.joined(separator: " ")) (groups: \(groups.joined(separator: ", "))); "
                             + "name one with --access-group")
        }
        guard let item = found.first else { return nil }
        guard let ref = item.persistentRef else { throw KeychainStatus.decode }
        return ref
    }

    /// The attributes that name an item of the class, in the order the error of an ambiguous
    /// `add -U` lists those given.
    static func nameWords(_ c: ItemClass) -> KeyValuePairs<AttributeKey, String> {
        c == .genericPassword
            ? [.service: "service", .account: "account"]
            : [.server: "server", .account: "account", .protocol: "protocol", .port: "port", .path: "path",
               .securityDomain: "security domain", .authenticationType: "authentication type"]
    }

    /// The secret of `-w`: a value, `-` for standard input, `@PATH` for a file's exact bytes,
    /// or a prompt when -w ends the line; of `--secret-file PATH`, as `-w @PATH`; or of `-X`:
    /// hexadecimal digits. - Throws: `UsageError` for two of them, or for bad hex; `StateError`
    /// for a secret file that cannot be read.
    /// `legacy`: `-p PASSWORD` means `-w PASSWORD`, as in security's add-generic-password.
    static func readSecret(_ ctx: Context, legacy: Bool = false) throws -> SecureBytes {
        let given = ["-w", "-X", "--secret-file"] + (legacy ? ["-p"] : [])
        guard given.filter(ctx.args.has).count <= 1 else { throw UsageError("give the secret once: -w, --secret-file or -X") }
        if let path = ctx.args.value("--secret-file") { return try Terminal.readSecretFile(path) }
        if legacy, let p = ctx.args.value("-p") {
            Terminal.warn("a secret on the command line is visible to other users; prefer -w - with standard input")
            return try SecureBytes(copying: Array(p.utf8))
        }
        if let hex = ctx.args.value("-X") {
            let secret = try decodeHex(hex)
            Terminal.warn("a secret on the command line is visible to other users; prefer -w - with standard input")
            return secret
        }
        if let w = ctx.args.value("-w") {
            if w == "-" { return try Terminal.readAllStdin() }
            if w.hasPrefix("@") && w.count > 1 { return try Terminal.readSecretFile(String(w.dropFirst())) }
            Terminal.warn("a secret on the command line is visible to other users; prefer -w - with standard input")
            return try SecureBytes(copying: Array(w.utf8))
        }
        if ctx.args.has("-w") {
            if !Terminal.stdinIsTerminal { return try Terminal.readAllStdin() }
            let first = try Terminal.prompt("password data for new item: ")
            let again = try Terminal.prompt("retype password for new item: ")
            guard first.constantTimeEquals(again) else { throw UsageError("the passwords differ") }
            return first
        }
        return try SecureBytes(count: 0)
    }

    /// The bytes of `-X HEX`, decoded straight into guarded memory.
    static func decodeHex(_ text: String) throws -> SecureBytes {
        let digits = Array(text.utf8)
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x41...0x46: return c - 0x41 + 10
            case 0x61...0x66: return c - 0x61 + 10
            default: return nil
            }
        }
        guard digits.count % 2 == 0, digits.allSatisfy({ value($0) != nil }) else {
            throw UsageError("-X takes an even number of hexadecimal digits (0-9, a-f, A-F)")
        }
        let out = try SecureBytes(count: digits.count / 2)
        out.withUnsafeMutableBytes { b in
            for i in 0..<b.count { b[i] = value(digits[2 * i])! << 4 | value(digits[2 * i + 1])! }
        }
        return out
    }

    static func find(_ c: ItemClass) -> Verb {
        Verb(
            name: "find-\(noun(c))", usage: "[-s ...] [-a ACCOUNT] [-w | -g] [--json] [VAULT]",
            summary: "Find the first matching \(c == .genericPassword ? "generic" : "internet") password and print it.",
            valued: Set(attributeFlags(c).keys).union(["--access-group"]), flags: ["-w", "-g"],
            details: classDetails(c) + """

              -w           print only the password, followed by a newline
              -g           also print the password (on standard error, as security does)
              --json       one JSON object: keychain, class, attributes, and password with -w or -g
            """
        ) { ctx in
            try ctx.checkPositionals()
            var query = try attributes(ctx, c)
            let wantSecret = ctx.args.has("-w") || ctx.args.has("-g")
            query[.returnAttributes] = .bool(true)
            if wantSecret { query[.returnData] = .bool(true) }
            let client = try ctx.client()
            let r: Response
            do {
                r = try client.send(Request(.copyMatching, query: query))
            } catch KeychainStatus.itemNotFound {
                // Apple's searches see only sync=0 items; the CLI falls back to synchronizable ones.
                query[.synchronizable] = .synchronizableAny
                r = try client.send(Request(.copyMatching, query: query))
            }
            guard let item = r.result.value?.item else { throw KeychainStatus.decode }
            if ctx.json {
                var out = "{\"keychain\":\(Output.jsonString(ctx.vault)),\"class\":\"\(c.rawValue)\",\"attributes\":\(Output.json(item.attributes))"
                if wantSecret, let s = item.secret {
                    out += ",\"password\":" + s.withUnsafeBytes { Output.json(.data(Array($0))) }
                }
                Terminal.writeString(1, out + "}\n")
            } else if ctx.args.has("-w") {
                item.secret?.withUnsafeBytes { Terminal.writeAll(1, $0) }
                Terminal.writeString(1, "\n")
            } else {
                Terminal.writeString(1, Output.itemText(vault: ctx.vault, attributes: item.attributes))
                if ctx.args.has("-g"), let s = item.secret {
                    let shown = s.withUnsafeBytes { Output.printable(Array($0)).map { "\"\(Output.escape($0))\"" } ?? "0x" + Hex.encode(Array($0)) }
                    Terminal.writeString(2, "password: \(shown)\n")
                }
            }
            return 0
        }
    }

    static func delete(_ c: ItemClass) -> Verb {
        Verb(
            name: "delete-\(noun(c))", usage: "[-s ...] [-a ACCOUNT] [...] | --all [--access-group GROUP] [VAULT]",
            summary: "Delete every matching \(c == .genericPassword ? "generic" : "internet") password.",
            valued: Set(attributeFlags(c).keys).union(["--access-group"]), flags: ["--all"],
            details: classDetails(c) + """

              --all        delete every \(noun(c)) item you may change (of GROUP only with
                           --access-group); without it at least one attribute flag is needed
            """
        ) { ctx in
            try ctx.checkPositionals()
            // An empty query matches everything: deleting all of it must be asked for by name.
            let named = namesAnAttribute(ctx, c)
            if ctx.args.has("--all") {
                guard !named else { throw UsageError("--all deletes every item; give it without attribute flags") }
            } else if !named {
                throw UsageError("delete-\(noun(c)) without an attribute flag (-s, -a, ...) would delete every \(noun(c)) item you may change; give --all to do that")
            }
            var query = try attributes(ctx, c)
            query[.synchronizable] = .synchronizableAny
            try ctx.client().send(Request(.delete, query: query))
            if !ctx.json { Terminal.writeString(1, "password has been deleted.\n") }
            return 0
        }
    }

    static let dump = Verb(
        name: "dump-keychain", usage: "[-a] [-d] [--json] [VAULT]",
        summary: "List every readable item (attributes; -d adds the secrets).",
        flags: ["-a", "-d", "-i", "-r"],
        details: """
          -d   also the secret of each item (decrypted), as security's -d
          -a   also who may use each item: security prints its access control list; here access
               is by access group, so the line is `access: GROUP owner=U group=G mode=M ...` as
               `group list` prints it (root and the daemon's user see the owner and mode,
               others `access: GROUP`); with --json the same text as "access"
        -i (interactive ACL editing) and -r (the encrypted data) are not offered: exit 2.
        """
    ) { ctx in
        try ctx.checkPositionals()
        if ctx.args.has("-i") { throw UsageError("dump-keychain -i is not offered: access is by access group (keychainfs group set)") }
        if ctx.args.has("-r") { throw UsageError("dump-keychain -r is not offered: the daemon never hands out sealed item data (export makes an encrypted backup)") }
        let client = try ctx.client()
        var access: [String: String] = [:]
        if ctx.args.has("-a"), let rows = try? client.send(Request(.groupList)).result.array {
            for row in rows.compactMap({ $0.item?.attributes.fields }) {
                if let name = row["name"]?.stringValue { access[name] = row["mode"] == nil ? name : GroupVerbs.line(row) }
            }
        }
        var jsonItems: [String] = []
        for c in [ItemClass.genericPassword, .internetPassword, .certificate, .key] {
            var query: Attributes = [.class: .string(c.rawValue), .synchronizable: .synchronizableAny, .matchLimit: .matchLimitAll,
                                     .returnAttributes: .bool(true)]
            if ctx.args.has("-d") { query[.returnData] = .bool(true) }
            let r: Response
            do { r = try client.send(Request(.copyMatching, query: query)) } catch KeychainStatus.itemNotFound { continue }
            for v in r.result.array ?? [] {
                guard let item = v.item else { continue }
                if ctx.json {
                    var obj = "{\"class\":\"\(c.rawValue)\",\"attributes\":\(Output.json(item.attributes))"
                    if ctx.args.has("-a"), let group = item.attributes[.accessGroup]?.stringValue {
                        obj += ",\"access\":" + Output.jsonString(access[group] ?? group)
                    }
                    if let s = item.secret { obj += ",\"password\":" + s.withUnsafeBytes { Output.json(.data(Array($0))) } }
                    jsonItems.append(obj + "}")
                } else {
                    var text = Output.itemText(vault: ctx.vault, attributes: item.attributes)
                    if ctx.args.has("-a"), let group = item.attributes[.accessGroup]?.stringValue {
                        text += "access: \(access[group] ?? group)\n"
                    }
                    if let s = item.secret {
                        text += "data:\n" + s.withUnsafeBytes { Output.printable(Array($0)).map { "\"\(Output.escape($0))\"" } ?? "0x" + Hex.encode(Array($0)) } + "\n"
                    }
                    Terminal.writeString(1, text)
                }
            }
        }
        if ctx.json { Terminal.writeString(1, "[" + jsonItems.joined(separator: ",") + "]\n") }
        return 0
    }
}
