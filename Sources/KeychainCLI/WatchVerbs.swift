import KeychainClient
import KeychainModel
import KeychainProtocol

/// `keychainfs watch`: a stream of changes, since inotify cannot see what the daemon changes.
enum WatchVerbs {
    static let all: [Verb] = [watch]

    static let watch = Verb(
        name: "watch", usage: "[-s SERVICE] [-a ACCOUNT] [--json] [VAULT]",
        summary: "Print one line per add, update, delete, lock and unlock, as they happen.",
        valued: ["-s", "-a"],
        details: """
        Runs until interrupted. Lines are `TIME EVENT SERVICE/ACCOUNT` (UTC); --json prints one
        object per line. -s and -a keep only changes of that service (and account); locks and
        unlocks always show. Callers entitled to any access group may watch, and see only
        changes of items in their groups; only root and the daemon's user see service and
        account names. A watcher that falls 256 events behind gets `overflow` and ends.
        """
    ) { ctx in
        try ctx.checkPositionals()
        let watch = WatchRequest(service: ctx.args.value("-s"), account: ctx.args.value("-a"))
        let client = try ctx.client()
        try client.send(watch.request)
        while let frame = try client.receive() {
            let event = try WatchEvent(decoding: frame)
            // The same ISO 8601 time as the text lines, not epoch seconds.
            let time = Output.isoDate(AbsoluteTime.absolute(unix: Double(event.time)))
            if ctx.json {
                var shaped = event.fields
                shaped["time"] = .string(time)
                Terminal.writeString(1, Output.jsonShaped(shaped) + "\n")
                continue
            }
            var line = "\(time) \(event.kind)"
            let s = event.service, a = event.account
            if s != nil || a != nil { line += " \(s ?? "*")/\(a ?? "*")" }
            Terminal.writeString(1, line + "\n")
        }
        return 0
    }
}
