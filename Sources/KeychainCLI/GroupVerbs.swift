import KeychainClient
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// `keychainfs group add|set|list|remove`: access groups as Unix owner, group and mode.
enum GroupVerbs {
    static let all: [Verb] = [group]

    static let group = Verb(
        name: "group", usage: "add|set|list|remove [NAME] [--owner USER|UID] [--group GROUP|GID] [--mode OCTAL] [--exe PATH]... [--may-lock|--no-lock] [--may-audit|--no-audit] [VAULT]",
        summary: "Manage access groups: who is entitled to the items of each group.",
        valued: ["--owner", "--group", "--mode", "--exe"], flags: ["--no-exe", "--may-lock", "--no-lock", "--may-audit", "--no-audit"],
        details: """
        A caller is entitled to a group when it runs one of the --exe programs (if any are set)
        and is root, the owner, a member of the Unix group while the mode lets the group read
        (0040), or anyone while the mode lets others read (0004). New groups are owned by the
        daemon's user and group with mode 0400. --no-exe clears the executable list.
        Locking the vault (lock-keychain) is the daemon's user's and root's; --may-lock lets the
        callers entitled to the group lock it too, --no-lock takes that back. --may-audit lets them
        read the audit log (keychainfs audit), --no-audit takes that back.
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
        // Only add and set change a group: elsewhere these flags would be silently ignored.
        if op == .groupList || op == .groupRemove {
            for flag in ["--owner", "--group", "--mode", "--exe", "--no-exe", "--may-lock", "--no-lock", "--may-audit", "--no-audit"] where ctx.args.has(flag) {
                throw UsageError("group \(sub) takes no \(flag)")
            }
        }
        let named = op != .groupList
        let max = named ? 3 : 2
        guard ctx.args.positionals.count <= max else { throw UsageError("too many arguments") }
        let vault = ctx.args.positionals.count == max ? ctx.vault : Paths.canonical(Paths.defaultVault())
        var change = GroupChange(name: "")
        if named {
            guard ctx.args.positionals.count >= 2 else { throw UsageError("group \(sub) needs a NAME") }
            let name = ctx.args.positionals[1]
            guard !name.isEmpty else { throw UsageError("group \(sub) needs a NAME; the name is empty") }
            if op == .groupAdd { try checkNewName(name) }
            change.name = name
        }
        if let o = ctx.args.value("--owner") { change.owner = try uid(o) }
        if let g = ctx.args.value("--group") { change.gid = try gid(g) }
        if let mode = try ctx.args.octal("--mode", in: SettingLimits.groupMode) { change.mode = UInt32(mode) }
        if ctx.args.has("--may-lock") && ctx.args.has("--no-lock") { throw UsageError("--may-lock and --no-lock contradict each other") }
        if ctx.args.has("--may-lock") { change.grantsLock = true }
        if ctx.args.has("--no-lock") { change.grantsLock = false }
        if ctx.args.has("--may-audit") && ctx.args.has("--no-audit") { throw UsageError("--may-audit and --no-audit contradict each other") }
        if ctx.args.has("--may-audit") { change.grantsAudit = true }
        if ctx.args.has("--no-audit") { change.grantsAudit = false }
        if ctx.args.has("--exe") || ctx.args.has("--no-exe") {
            let exes = ctx.args.all("--exe")
            // The list travels one path a line: a newline would smuggle in a second program.
            for exe in exes where exe.isEmpty || exe.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) {
                throw UsageError("--exe takes the path of a program; \(Output.jsonString(exe)) is not one")
            }
            change.executables = exes.map(Paths.canonical)
        }
        let request: GroupRequest
        switch op {
        case .groupAdd: request = .add(change)
        case .groupSet: request = .set(change)
        case .groupRemove: request = .remove(name: change.name)
        default: request = .list
        }
        let client = try Engine.connect(vault)
        let r = try client.send(request.request)
        if op == .groupList {
            let rows = (r.result.array ?? []).compactMap { $0.item?.attributes.fields }
            if ctx.json {
                Terminal.writeString(1, "[" + rows.map { Output.jsonShaped(withNames($0)) }.joined(separator: ",") + "]\n")
            } else {
                for a in rows { Terminal.writeString(1, line(a) + "\n") }
            }
        }
        return 0
    }

    /// One group as `group list` prints it: `team owner=alice group=staff mode=0440 ...`.
    static func line(_ a: Fields) -> String {
        let mode = a["mode"].flatMap { if case .number(let n) = $0 { return String(n, radix: 8) } else { return nil } } ?? "?"
        let exe = a["exe"]?.stringValue ?? ""
        let named = withNames(a)
        let owner = named["owner-name"]?.stringValue ?? Output.json(a["owner"] ?? 0)
        let group = named["group-name"]?.stringValue ?? Output.json(a["gid"] ?? 0)
        return "\(a["name"]?.stringValue ?? "?") owner=\(owner) group=\(group) mode=0\(mode)"
            + (exe.isEmpty ? "" : " exe=" + exe.replacingAll("\n", ","))
            + (a["lock"] == .number(1) ? " may-lock" : "") + (a["audit"] == .number(1) ? " may-audit" : "")
    }

    /// A group row with `owner-name` and `group-name` added where this machine resolves the
    /// owner's uid and the gid (`getpwuid`, `getgrgid`); the numbers stay.
    static func withNames(_ row: Fields) -> Fields {
        var out = row
        if case .number(let uid)? = row["owner"], let id = UInt32(exactly: uid), let name = UserDatabase.userName(of: id) {
            out["owner-name"] = .string(name)
        }
        if case .number(let gid)? = row["gid"], let id = UInt32(exactly: gid), let name = UserDatabase.groupName(of: id) {
            out["group-name"] = .string(name)
        }
        return out
    }

    /// A new group's name: 1 to 255 bytes, no control characters, spaces, commas or colons
    /// (`group list` separates by spaces, mount views list groups as `groups=A:B`).
    static func checkNewName(_ name: String) throws {
        let bad = name.unicodeScalars.first { $0.value <= 0x20 || $0.value == 0x7f || $0 == "," || $0 == ":" }
        guard SettingLimits.groupNameBytes.contains(name.utf8.count), bad == nil else {
            throw UsageError("a group name is 1 to \(SettingLimits.groupNameBytes.upperBound) bytes without spaces, control characters, commas or colons; \(Output.jsonString(name)) is not one")
        }
    }

    /// A user name, or a uid from 0 to 4294967294.
    static func uid(_ s: String) throws -> UInt32 {
        if isNumber(s) { return UInt32(try Arguments.number(s, flag: "--owner", in: SettingLimits.id, unit: "a user name or a uid")) }
        guard let uid = UserDatabase.userID(named: s) else { throw UsageError("no such user \(s)") }
        return uid
    }

    /// A group name, or a gid from 0 to 4294967294.
    static func gid(_ s: String) throws -> UInt32 {
        if isNumber(s) { return UInt32(try Arguments.number(s, flag: "--group", in: SettingLimits.id, unit: "a group name or a gid")) }
        guard let gid = UserDatabase.groupID(named: s) else { throw UsageError("no such group \(s)") }
        return gid
    }

    /// Digits with an optional sign: meant as a number, never looked up as a name.
    static func isNumber(_ s: String) -> Bool {
        let digits = s.first == "-" || s.first == "+" ? s.utf8.dropFirst() : s.utf8[...]
        return !digits.isEmpty && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
