import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol
import KeychainSystem

/// `keychainfs sync init|join|approve|remove|status|set|leave` and `history`: fleet sync's
/// circle and the versions it set aside (docs/sync.md).
enum SyncVerbs {
    static let all: [Verb] = [sync, history]

    static let history = Verb(
        name: "history", usage: "[-s SERVICE] [-a ACCOUNT] [-w] [--json] [--restore ID] [VAULT]",
        summary: "List the versions fleet sync set aside in conflicts, newest first, or restore one.",
        valued: ["-s", "-a", "--restore"], flags: ["-w"],
        details: """
        When two hosts add an item with one primary key, the lower uuid wins; when two change
        one item, the server's order decides. The losing version is kept here, never dropped.
          -s SERVICE   only versions of this service
          -a ACCOUNT   only versions of this account
          -w           print only the passwords, newest first, one per line
          --json       an array of objects: id, at, reason, class, attributes, and password with -w
          --restore ID writes the version with this id back as a change made here, which syncs
                       to the other hosts: over the item it belongs to, or as a new item when
                       that is gone. The version stays in the history.
        reason is higher-uuid, server-order or missed-delete. Only root and the daemon's user
        may list or restore.
        """
    ) { ctx in
        try ctx.checkPositionals()
        if ctx.args.has("--restore") { return try restore(ctx) }
        let wantSecret = ctx.args.has("-w")
        let history = SyncRequest.history(service: ctx.args.value("-s"), account: ctx.args.value("-a"), secrets: wantSecret)
        let entries = (try ctx.client().call(history, SyncReply.self).history.array ?? []).compactMap(\.item)
        var json: [String] = []
        for item in entries {
            var attributes = item.attributes
            let at = attributes.removeValue(forKey: .historyAt)
            let reason = attributes.removeValue(forKey: .historyReason)?.stringValue ?? "?"
            let id = attributes.removeValue(forKey: .historyID)?.numberValue ?? 0
            let when = at.flatMap { if case .date(let d) = $0 { Output.isoDate(d) } else { nil } } ?? "?"
            if ctx.json {
                var obj = "{\"id\":\(id),\"at\":\"\(when)\",\"reason\":\(Output.jsonString(reason)),\"class\":"
                    + Output.jsonString(attributes[.class]?.stringValue ?? "?") + ",\"attributes\":\(Output.json(attributes))"
                if wantSecret, let s = item.secret { obj += ",\"password\":" + s.withUnsafeBytes { Output.json(.data(Array($0))) } }
                json.append(obj + "}")
            } else if wantSecret {
                item.secret?.withUnsafeBytes { Terminal.writeAll(1, $0) }
                Terminal.writeString(1, "\n")
            } else {
                Terminal.writeString(1, "id: \(id)\nat: \(when)\nreason: \(reason)\n" + Output.itemText(vault: ctx.vault, attributes: attributes))
            }
        }
        if ctx.json { Terminal.writeString(1, "[" + json.joined(separator: ",") + "]\n") }
        return 0
    }

    /// `history --restore ID`: alone, as it names one version already.
    static func restore(_ ctx: Context) throws -> Int32 {
        for flag in ["-s", "-a", "-w"] where ctx.args.has(flag) { throw UsageError("history --restore takes no \(flag)") }
        let text = ctx.args.value("--restore") ?? ""
        guard let id = Int64(text), id > 0 else {
            throw UsageError("--restore takes the id of a kept version, as history prints it; \(Output.jsonString(text)) is not one")
        }
        do {
            _ = try ctx.client().call(SyncRequest.restore(id: id), SyncReply.self)
        } catch KeychainStatus.itemNotFound {
            throw StateError(message: "no version with id \(id) in the history\nkeychainfs: keychainfs history lists the kept versions with their ids",
                             status: .itemNotFound)
        } catch KeychainStatus.interactionNotAllowed {
            throw StateError(message: "version \(id) cannot be restored: its protection class's key is locked"
                             + "\nkeychainfs: unlock the vault (keychainfs unlock-keychain) and run it again",
                             status: .interactionNotAllowed)
        } catch KeychainStatus.duplicateItem {
            throw StateError(message: "version \(id) cannot be restored: another item now has its name (service and account)"
                             + "\nkeychainfs: delete or rename that item first",
                             status: .duplicateItem)
        }
        if ctx.json {
            Terminal.writeString(1, "{\"restored\":\(id)}\n")
        } else {
            Terminal.writeString(1, "restored \(id)\n")
        }
        return 0
    }

    static let sync = Verb(
        name: "sync", usage: "init|join|approve|remove|status|set|leave [CODE|HOST] [--server CONNINFO | --server-file PATH] [--name NAME] [--retention DAYS] [--poll SECONDS] [--json] [VAULT]",
        summary: "Replicate sync=1 items among hosts through PostgreSQL, end-to-end encrypted.",
        valued: ["--server", "--server-file", "--name", "--retention", "--poll"],
        details: """
        init makes this host the first of a circle on the server; join asks to join and prints a
        code; approve CODE, on a member, admits the host that printed it; remove HOST (a
        member's name, or 8 or more hex digits of its id) starts a new epoch whose key only the
        other members get: HOST can read nothing written after; status shows the circle and
        the last round; set --retention DAYS sets, for the whole circle, how many days a member
        may go unseen before the server's log is pruned past it (default 30; it then reads the
        whole log when it returns); set --poll SECONDS (also on init and join, to poll from
        the start) makes this host look for changes every SECONDS without holding a LISTEN
        connection, for a server reached through a pooler such as PgBouncer in transaction
        mode (0, the default: it listens); leave forgets the circle here (items stay).
        CONNINFO is a libpq connection string. It must not hold a password: put the password
        in libpq's passfile (`passfile=PATH` in the string, or ~/.pgpass of the daemon's user).
        --server-file reads the string from a file, or from standard input with `-`.
        --name names this host to the others (default: the host name). The vault must be
        unlocked. Only root and the daemon's user may use these commands.
        """
    ) { ctx in
        guard let sub = ctx.args.positionals.first else { throw UsageError("sync needs init, join, approve, remove, status, set or leave") }
        let request: SyncRequest
        var rest = Array(ctx.args.positionals.dropFirst())
        switch sub {
        case "init", "join":
            let server = try conninfo(ctx.args), name = ctx.args.value("--name") ?? hostName()
            let poll = try pollMilliseconds(ctx.args)
            request = sub == "init" ? .initCircle(server: server, name: name, pollMilliseconds: poll)
                                    : .join(server: server, name: name, pollMilliseconds: poll)
        case "approve":
            guard let code = rest.first else { throw UsageError("sync approve needs the CODE the joining host printed") }
            request = .approve(code: code)
            rest.removeFirst()
        case "remove":
            guard let host = rest.first else { throw UsageError("sync remove needs the HOST to remove (its name or id)") }
            request = .remove(host: host)
            rest.removeFirst()
        case "status": request = .status
        case "set":
            let days = try ctx.args.number("--retention", in: 1...SyncRequest.maximumRetentionDays, unit: "a number of days")
            let poll = try pollMilliseconds(ctx.args)
            guard days != nil || poll != nil else { throw UsageError("sync set needs --retention DAYS or --poll SECONDS") }
            request = .set(retentionDays: days, pollMilliseconds: poll)
        case "leave": request = .leave
        default:
            throw UsageError("unknown sync command \(sub)")
        }
        if sub != "init" && sub != "join" {
            for flag in ["--server", "--server-file", "--name"] where ctx.args.has(flag) {
                throw UsageError("sync \(sub) takes no \(flag)")
            }
        }
        if sub != "set" && ctx.args.has("--retention") { throw UsageError("sync \(sub) takes no --retention") }
        if !["set", "init", "join"].contains(sub) && ctx.args.has("--poll") { throw UsageError("sync \(sub) takes no --poll") }
        guard rest.count <= 1 else { throw UsageError("too many arguments") }
        let vault = rest.first.map(Paths.canonical) ?? Paths.canonical(Paths.defaultVault())
        let client = try DaemonClient.connect(vaultPath: vault, startWith: [selfExecutable(), "daemon", vault])
        let reply = try client.call(request, SyncReply.self)
        if ctx.json {
            Terminal.writeString(1, Output.json(reply.fields) + "\n")
            return 0
        }
        switch sub {
        case "join":
            Terminal.writeString(1, "\(reply.code ?? "?")\n")
            Terminal.warn("type this code on a member: keychainfs sync approve CODE")
        case "approve":
            Terminal.writeString(1, "approved \(reply.name ?? "?")\n")
        case "remove":
            Terminal.writeString(1, "removed \(reply.name ?? "?")\n")
        case "status", "init", "set":
            for (key, value) in reply.status.sorted(by: { $0.key < $1.key }) {
                Terminal.writeString(1, "\(key): \(Output.json(value))\n")
            }
        default:
            break
        }
        return 0
    }

    /// --poll SECONDS in milliseconds: 0, or 0.1 to 3600 with at most three decimals.
    static func pollMilliseconds(_ args: Arguments) throws -> Int64? {
        guard let text = args.value("--poll") else { return nil }
        let accepted = "--poll takes seconds from 0.1 to 3600 (0: listen, the default)"
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let digits = { (s: Substring) in !s.isEmpty && s.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }
        guard let whole = parts.first, digits(whole), whole.count <= 4, parts.count == 1 || (digits(parts[1]) && parts[1].count <= 3),
              let seconds = Int64(whole) else {
            throw UsageError("\(accepted); \(Output.jsonString(text)) is not such a number")
        }
        let fraction = parts.count == 2 ? Int64(parts[1] + String(repeating: "0", count: 3 - parts[1].count)) ?? 0 : 0
        let ms = seconds * 1000 + fraction
        guard SyncRequest.isPoll(ms) else { throw UsageError("\(accepted); \(text) is out of range") }
        return ms
    }

    /// The connection string from --server or --server-file; refused when it holds a password.
    static func conninfo(_ args: Arguments) throws -> String {
        let text: String
        switch (args.value("--server"), args.value("--server-file")) {
        case (let s?, nil):
            text = s
        case (nil, let path?):
            let bytes = path == "-" ? try Terminal.readAllStdin(limit: 1 << 16) : try readSmallFile(path)
            defer { bytes.wipe() }
            text = bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        case (nil, nil):
            throw UsageError("sync init and join need --server CONNINFO or --server-file PATH")
        default:
            throw UsageError("--server and --server-file contradict each other")
        }
        let trimmed = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        guard !trimmed.isEmpty else { throw UsageError("the connection string is empty") }
        // The daemon refuses one that parses with a password; say so before it travels.
        if trimmed.contains("password") || uriHasPassword(trimmed) {
            throw UsageError("the connection string must not hold a password: use libpq's passfile")
        }
        return trimmed
    }

    /// `postgresql://user:secret@host/...`: a password in a URI's user part.
    static func uriHasPassword(_ s: String) -> Bool {
        guard let scheme = s.firstRange(of: "://") else { return false }
        let rest = s[scheme.upperBound...]
        guard let at = rest.firstIndex(of: "@") else { return false }
        let user = rest[..<at]
        return !user.contains("/") && user.contains(":")
    }

    static func readSmallFile(_ path: String) throws -> SecureBytes {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, .readOnly) } catch { throw UsageError("cannot read \(path): \(error)") }
        defer { try? fd.close() }
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        defer { wipeBytes(&buf) }
        let n: Int
        do { n = try buf.withUnsafeMutableBytes { try fd.read(into: $0) } } catch { throw UsageError("cannot read \(path): \(Errno(error))") }
        return try SecureBytes(copying: buf[0..<n])
    }

    static func hostName() -> String {
        (try? CurrentProcess.hostName()) ?? "host"
    }
}
