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
        let info = try ctx.client().send(Request(.verify)).info
        let damaged = (info["damaged"]?.stringValue ?? "").split(separator: "\n").map(String.init)
        let auditBad = info["audit-first-bad"]
        if ctx.json {
            Terminal.writeString(1, Output.jsonShaped(info) + "\n")
        } else {
            func n(_ k: String) -> String { info[k].map(Output.json) ?? "0" }
            var out = "items: \(n("checked")) checked, \(n("locked")) locked (not checked), \(n("other-device")) of another device, \(damaged.count) damaged\n"
            for d in damaged { out += "  damaged: \(d)\n" }
            out += auditBad.map { "audit log: broken at line \(Output.json($0))\n" } ?? "audit log: \(n("audit-lines")) entries, chain intact\n"
            Terminal.writeString(1, out)
        }
        return damaged.isEmpty && auditBad == nil ? 0 : KeychainStatus.decode.exitCode
    }
}
