import KeychainClient
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// macOS's keychain-list verbs. Here the search list is one vault: the default one
/// (`$KEYCHAINFS_VAULT`, else the per-user vault), so each of them prints that path.
enum KeychainListVerbs {
    static let all: [Verb] = [list("list-keychains"), list("default-keychain"), list("login-keychain"), delete, error]

    static func list(_ name: String) -> Verb {
        Verb(
            name: name, usage: "[-d user|system|common|dynamic]",
            summary: name == "list-keychains" ? "Print the vault search list: the default vault."
                : "Print the \(name == "login-keychain" ? "login" : "default") vault (as security, quoted and indented).",
            valued: ["-d", "-s"],
            details: """
            Prints `    "PATH"`: $KEYCHAINFS_VAULT, else ~/.local/share/keychainfs/login.vault
            (/var/lib/keychainfs/login.vault for root). -d is accepted for every domain and changes
            nothing. -s (set) is not supported: set KEYCHAINFS_VAULT, or name the vault as the last
            argument of a command.
            """
        ) { ctx in
            guard !ctx.args.has("-s") else {
                throw UsageError("\(name) -s is not supported: set KEYCHAINFS_VAULT, or give the vault as the last argument")
            }
            if let d = ctx.args.value("-d"), !["user", "system", "common", "dynamic"].contains(d) {
                throw UsageError("-d takes user, system, common or dynamic")
            }
            guard ctx.args.positionals.isEmpty else { throw UsageError("too many arguments") }
            Terminal.writeString(1, "    \"\(Output.escape(Paths.canonical(Paths.defaultVault())))\"\n")
            return 0
        }
    }

    static let delete = Verb(
        name: "delete-keychain", usage: "[--yes] [VAULT]",
        summary: "Delete a vault file, its audit log and its back-off count, when no daemon serves it.",
        flags: ["--yes"],
        details: """
        The file must be a keychainfs vault (exit 49 otherwise, 50 when it does not exist) that no
        daemon has open (exit 36: run keychainfs stop VAULT first). It asks first, on the terminal,
        unless --yes is given; without a terminal --yes is needed (exit 2). Removes VAULT, its
        SQLite side files (-wal, -shm), VAULT.audit and its rotated files, and the back-off count.
        The device key is kept: other vaults may use it.
        """
    )  // body: keychainfs-daemon (it opens the file to check it is a vault)

    static let error = Verb(
        name: "error", usage: "CODE...",
        summary: "Print Apple's message for each OSStatus CODE (decimal or 0x hex), as security error does."
    ) { ctx in
        guard !ctx.args.positionals.isEmpty else { throw UsageError("error takes at least one CODE") }
        var out = ""
        for text in ctx.args.positionals {
            guard let code = osStatus(text) else {
                throw UsageError("\(Output.jsonString(text)) is not an OSStatus: give a decimal number (-25300) or 0x and hex digits")
            }
            let hex = String(UInt32(bitPattern: code), radix: 16, uppercase: true)
            let message = KeychainStatus(rawValue: code).message
            // security prints cssmErrorString's "unknown error N=HEX" for a code it has no sentence for.
            // Statuses 100000 to 100255 are errno values (errSecErrnoBase): `UNIX[strerror]`.
            let shown = (100_000...100_255).contains(code) ? "UNIX[\(Errno(rawValue: code - 100_000))]"
                : !message.hasPrefix("OSStatus ") ? message
                : "unknown error \(code)=\(String(UInt64(bitPattern: Int64(code)), radix: 16))"
            out += "Error: 0x" + String(repeating: "0", count: 8 - hex.count) + hex + " \(code) \(shown)\n"
        }
        Terminal.writeString(1, out)
        return 0
    }

    /// A 32-bit status from decimal (`-25300`) or hex (`0xFFFF9D2C`); nil for anything else.
    static func osStatus(_ text: String) -> Int32? {
        if text.hasPrefix("0x") || text.hasPrefix("0X") {
            guard let v = UInt32(text.dropFirst(2), radix: 16) else { return nil }
            return Int32(bitPattern: v)
        }
        guard text.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || ($0 >= 0x30 && $0 <= 0x39) }) else { return nil }
        if let v = Int32(text) { return v }
        return UInt32(text).map { Int32(bitPattern: $0) }
    }
}

/// The daemons `lock-keychain -a` reaches.
enum LockAll {
    /// The `*.sock` files in `directory`, sorted.
    static func sockets(in directory: String) -> [String] {
        let names = (try? FileSystem.entries(of: directory)) ?? []
        return names.filter { $0.hasSuffix(".sock") }.map { directory + "/" + $0 }.sorted()
    }
}
