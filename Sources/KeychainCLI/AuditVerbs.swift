import KeychainClient
import KeychainCore
import KeychainProtocol

/// `keychainfs audit [--verify]`: the daemon's hash-chained audit log.
enum AuditVerbs {
    static let all: [Verb] = [audit]

    static let audit = Verb(
        name: "audit", usage: "[--verify] [VAULT]",
        summary: "Show the vault's audit log, or check its hash chain (--verify).",
        flags: ["--verify"],
        details: """
        Lines: SEQ TIME UID PID EVENT DETAIL EXE CHAIN, tab-separated; items appear by persistent
        reference, never by name. --verify exits 0 when every line chains to the one before, and
        93 (errSecDecode) naming the first line that does not. Root and the daemon's user only.
        """
    ) { ctx in
        try ctx.checkPositionals()
        let client = try ctx.client()
        if ctx.args.has("--verify") {
            let info = try client.send(Request(.audit, options: ["verify": .bool(true)])).info
            let lines = info["lines"].map(Output.json) ?? "0"
            if let bad = info["first-bad"] {
                Terminal.writeString(2, "keychainfs: the audit log is broken at line \(Output.json(bad))\n")
                return KeychainStatus.decode.exitCode
            }
            Terminal.writeString(1, ctx.json ? "{\"lines\":\(lines),\"verified\":true}\n" : "audit log verified: \(lines) entries\n")
            return 0
        }
        let info = try client.send(Request(.audit)).info
        Terminal.writeString(1, info["log"]?.stringValue ?? "")
        return 0
    }
}
