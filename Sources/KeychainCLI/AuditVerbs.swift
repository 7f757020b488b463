import KeychainClient
import KeychainCrypto
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// `keychainfs audit [rotate] [--verify] [filters] [--json]`: the daemon's hash-chained audit log.
enum AuditVerbs {
    static let all: [Verb] = [audit]

    static let filterFlags = ["--since", "--until", "--item", "--uid", "--event"]

    static let audit = Verb(
        name: "audit",
        usage: "[rotate] [--verify] [--since TIME] [--until TIME] [--item SERVICE/ACCOUNT|REF] [--uid USER|UID] [--event NAME[,NAME]] [--json] [VAULT]",
        summary: "Show the vault's audit log, check its hash chain (--verify) or start a new file (rotate).",
        valued: Set(filterFlags),
        flags: ["--verify"],
        details: """
        Lines: SEQ TIME UID PID EVENT DETAIL EXE CHAIN ITEM, tab-separated, TIME in ISO 8601 UTC.
        An item appears by its persistent reference (DETAIL); ITEM is its SERVICE/ACCOUNT (server
        of an internet password, label of a key) when you are entitled to the item, else -.
        --since and --until take 2026-12-02T01:30:00Z, 2026-12-02, or a span back from now (90s,
        15m, 2h, 7d), inclusive. --item takes a reference (40 hex digits) or SERVICE/ACCOUNT (split
        at the last /; an empty side matches any) of an item you may see. --event takes names
        such as read, file-open-read, add-failed. --json prints one object per line.
        --verify checks the chain through every rotated file (VAULT.audit.1 is the oldest) and
        the current one: exit 0, or 93 (errSecDecode) naming the file and line that break it.
        rotate moves VAULT.audit aside as the next VAULT.audit.N; the new file's first line
        (rotated) continues the chain. Root and the daemon's user; reading also callers entitled
        to a group with --may-audit (keychainfs group set NAME --may-audit).
        """
    ) { ctx in
        var positionals = ctx.args.positionals
        let rotate = positionals.first == "rotate"
        if rotate { positionals.removeFirst() }
        guard positionals.count <= 1 else { throw UsageError("too many arguments") }
        let vault = Paths.canonical(positionals.last ?? Paths.defaultVault())
        if rotate || ctx.args.has("--verify") {
            let what = rotate ? "audit rotate" : "audit --verify"
            if rotate && ctx.args.has("--verify") { throw UsageError("audit rotate takes no --verify") }
            for flag in filterFlags where ctx.args.has(flag) { throw UsageError("\(what) takes no \(flag)") }
        }
        let query = try filterQuery(ctx.args)
        let client = try Engine.connect(vault)
        if rotate {
            let path = try client.call(AuditRequest.rotate, AuditRotation.self).rotated
            Terminal.writeString(1, ctx.json ? "{\"rotated\":\(Output.jsonString(path))}\n" : "audit log rotated: \(path)\n")
            return 0
        }
        if ctx.args.has("--verify") {
            let chain = try client.call(AuditRequest.verify, AuditChain.self)
            let lines = chain.lines, files = chain.files
            if let bad = chain.firstBreak {
                throw StateError(message: "the audit log is broken at line \(bad.line) of \(bad.file)", status: .decode)
            }
            Terminal.writeString(1, ctx.json ? "{\"lines\":\(lines),\"files\":\(files),\"verified\":true}\n"
                                 : "audit log verified: \(lines) entries" + (files > 1 ? " in \(files) files" : "") + "\n")
            return 0
        }
        let found: AuditLines
        do {
            found = try client.call(AuditRequest.read(query), AuditLines.self)
        } catch KeychainStatus.itemNotFound where { if case .named? = query.item { true } else { false } }() {
            throw StateError(message: "--item \(ctx.args.value("--item") ?? ""): no item of that name that you may see (a deleted item is found by its reference)", status: .itemNotFound)
        }
        if let omitted = found.omitted {
            Terminal.warn("audit: the \(omitted) oldest matching lines are left out (a reply holds 12 MiB of lines); narrow it with --since, --until, --item, --uid or --event")
        }
        Terminal.writeString(1, AuditLineText.render(log: found.log, names: found.names, json: ctx.json))
        return 0
    }

    /// The filters as the daemon takes them; a bad value is a usage error.
    static func filterQuery(_ args: Arguments) throws -> AuditQuery {
        var query = AuditQuery()
        let now = SystemClock.realtime().seconds
        if let s = args.value("--since") { query.since = try AuditTimes.parse(s, flag: "--since", now: now) }
        if let u = args.value("--until") { query.until = try AuditTimes.parse(u, flag: "--until", now: now) }
        if let s = query.since, let u = query.until, s > u {
            throw UsageError("--since is after --until")
        }
        if let u = args.value("--uid") {
            query.uid = (Int64(GroupVerbs.isNumber(u) ? UInt32(try Arguments.number(u, flag: "--uid", in: SettingLimits.id, unit: "a user name or a uid")) : try GroupVerbs.uid(u)))
        }
        if let e = args.value("--event") {
            let names = e.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            for name in names where !AuditEvent.isRecorded(name) {
                throw UsageError("--event takes audit event names (such as read, add, file-open-read, add-failed, read-repeated); \(Output.jsonString(name)) is not one")
            }
            query.events = names
        }
        if let item = args.value("--item") {
            if item.utf8.count == 40, let bytes = Hex.decode(item.lowercased()), PersistentRef(bytes: bytes) != nil {
                query.item = .reference(item.lowercased())
            } else if let slash = item.lastIndex(of: "/"), item != "/" {
                query.item = .named(service: String(item[..<slash]), account: String(item[item.index(after: slash)...]))
            } else {
                throw UsageError("--item takes SERVICE/ACCOUNT or a persistent reference (40 hex digits); \(Output.jsonString(item)) is neither")
            }
        }
        return query
    }
}

/// The daemon's raw lines as `audit` prints them: ISO times, and the names the daemon resolved.
enum AuditLineText {
    static func render(log: String, names: String, json: Bool) -> String {
        var resolved: [Substring: (Substring, Substring)] = [:]
        for row in names.split(separator: "\n") {
            let f = row.split(separator: "\t", omittingEmptySubsequences: false)
            if f.count == 3 { resolved[f[0]] = (f[1], f[2]) }
        }
        var out = ""
        for line in log.split(separator: "\n") {
            var f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 8 else { out += line + "\n"; continue }
            if let t = Int64(f[1]) { f[1] = AuditTimes.format(t) }
            let ref = f[5].prefix { $0 != " " }
            let name = ref.utf8.count == 40 ? resolved[Substring(ref)] : nil
            if json {
                out += object(f, ref: ref.utf8.count == 40 ? String(ref) : nil, name: name) + "\n"
            } else {
                let item = name.map { $0.1.isEmpty ? String($0.0) : "\($0.0)/\($0.1)" } ?? "-"
                out += (f + [item]).joined(separator: "\t") + "\n"
            }
        }
        return out
    }

    /// `{"seq":N,"time":"ISO","uid":N|null,"pid":N|null,"event":S,"detail":S,"exe":S|null,
    /// "chain":S,"item":{"ref":S,"class":S,"service"|"server"|"label":S,"account":S}}`
    static func object(_ f: [String], ref: String?, name: (Substring, Substring)?) -> String {
        func number(_ s: String) -> String { Int64(s).map(String.init) ?? "null" }
        var o = "{\"seq\":\(number(f[0])),\"time\":\(Output.jsonString(f[1])),\"uid\":\(number(f[2])),\"pid\":\(number(f[3])),"
        o += "\"event\":\(Output.jsonString(f[4])),\"detail\":\(Output.jsonString(f[5])),"
        o += "\"exe\":\(f[6] == "-" ? "null" : Output.jsonString(f[6])),\"chain\":\(Output.jsonString(f[7]))"
        if let ref {
            let itemClass = Hex.decode(String(ref.prefix(8))).map { String(decoding: $0, as: UTF8.self) } ?? ""
            o += ",\"item\":{\"ref\":\(Output.jsonString(ref)),\"class\":\(Output.jsonString(itemClass))"
            if let name {
                let key = itemClass == "genp" ? "service" : itemClass == "inet" ? "server" : "label"
                o += ",\"\(key)\":\(Output.jsonString(String(name.0)))"
                if itemClass == "genp" || itemClass == "inet" { o += ",\"account\":\(Output.jsonString(String(name.1)))" }
            }
            o += "}"
        }
        return o + "}"
    }
}

/// `keychainfs verify`: the vault's full integrity check, with the audit chain.
enum VerifyVerbs {
    static let all: [Verb] = [verify]

    static let verify = Verb(
        name: "verify", usage: "[--json] [VAULT]",
        summary: "Check every item (blobs open, tokens match) and the audit chain; exit 93 if anything is damaged.",
        details: """
        Items of a locked class are counted, not checked: unlock first for a full check. Root and
        the daemon's user only. Reads only.
        """
    ) { ctx in
        try ctx.checkPositionals()
        let report = try ctx.client().call(BareRequest(.verify), VerifyReport.self)
        let damaged = report.damaged
        if ctx.json {
            Terminal.writeString(1, Output.jsonShaped(report.fields) + "\n")
        } else {
            var out = "items: \(report.checked) checked, \(report.locked) locked (not checked), \(report.otherDevice) of another device, \(damaged.count) damaged\n"
            for d in damaged { out += "  damaged: \(d)\n" }
            out += report.auditBreak.map { "audit log: broken at line \($0.line) of \($0.file)\n" }
                ?? "audit log: \(report.auditLines ?? 0) entries, chain intact\n"
            Terminal.writeString(1, out)
        }
        return damaged.isEmpty && report.auditBreak == nil ? 0 : KeychainStatus.decode.exitCode
    }
}
