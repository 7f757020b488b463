import Glibc
import KeychainClient
import KeychainCore
import KeychainProtocol

/// `keychainfs group add|set|list|remove`: access groups as Unix owner, group and mode.
enum GroupVerbs {
    static let all: [Verb] = [group]

    static let group = Verb(
        name: "group", usage: "add|set|list|remove [NAME] [--owner USER|UID] [--group GROUP|GID] [--mode OCTAL] [--exe PATH]... [VAULT]",
        summary: "Manage access groups: who is entitled to the items of each group.",
        valued: ["--owner", "--group", "--mode", "--exe"], flags: ["--no-exe"],
        details: """
        A caller is entitled to a group when it runs one of the --exe programs (if any are set)
        and is root, the owner, a member of the Unix group while the mode lets the group read
        (0040), or anyone while the mode lets others read (0004). New groups are owned by the
        daemon's user and group with mode 0400. --no-exe clears the executable list.
        Only root and the daemon's user may change groups.
        """
    ) { ctx in
        guard let sub = ctx.args.positionals.first else { throw UsageError("group needs add, set, list or remove") }
        let op: Operation
        switch sub {
        case "add": op = .groupAdd
        case "set": op = .groupSet
        case "remove": op = .groupRemove
        case "list": op = .groupList
        default: throw UsageError("unknown group command \(sub)")
        }
        let named = op != .groupList
        let max = named ? 3 : 2
        guard ctx.args.positionals.count <= max else { throw UsageError("too many arguments") }
        let vault = ctx.args.positionals.count == max ? ctx.vault : Paths.canonical(Paths.defaultVault())
        var options: Attributes = [:]
        if named {
            guard ctx.args.positionals.count >= 2 else { throw UsageError("group \(sub) needs a NAME") }
            options["name"] = .string(ctx.args.positionals[1])
        }
        if let o = ctx.args.value("--owner") { options["owner"] = .number(Int64(try uid(o))) }
        if let g = ctx.args.value("--group") { options["gid"] = .number(Int64(try gid(g))) }
        if let m = ctx.args.value("--mode") {
            guard let mode = Int64(m, radix: 8), mode >= 0, mode <= 0o777 else { throw UsageError("--mode takes an octal mode such as 0440") }
            options["mode"] = .number(mode)
        }
        if ctx.args.has("--exe") || ctx.args.has("--no-exe") {
            options["exe"] = .string(ctx.args.all("--exe").map(Paths.canonical).joined(separator: "\n"))
        }
        let client = try DaemonClient.connect(vaultPath: vault, startWith: [selfExecutable(), "daemon", vault])
        let r = try client.send(Request(op, options: options))
        if op == .groupList {
            let rows = (r.result.array ?? []).compactMap { $0.item?.attributes }
            if ctx.json {
                Terminal.writeString(1, "[" + rows.map(Output.json).joined(separator: ",") + "]\n")
            } else {
                for a in rows {
                    let mode = a["mode"].flatMap { if case .number(let n) = $0 { return String(n, radix: 8) } else { return nil } } ?? "?"
                    let exe = a["exe"]?.stringValue ?? ""
                    Terminal.writeString(1, "\(a["name"]?.stringValue ?? "?") owner=\(Output.json(a["owner"] ?? 0)) group=\(Output.json(a["gid"] ?? 0)) mode=0\(mode)"
                                         + (exe.isEmpty ? "" : " exe=" + exe.replacingAll("\n", ",")) + "\n")
                }
            }
        }
        return 0
    }

    static func uid(_ s: String) throws -> UInt32 {
        if let n = UInt32(s) { return n }
        guard let pw = getpwnam(s) else { throw UsageError("no such user \(s)") }
        return pw.pointee.pw_uid
    }

    static func gid(_ s: String) throws -> UInt32 {
        if let n = UInt32(s) { return n }
        guard let gr = getgrnam(s) else { throw UsageError("no such group \(s)") }
        return gr.pointee.gr_gid
    }
}
