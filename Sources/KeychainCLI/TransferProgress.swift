/// The line a backup's export or import keeps rewritten in place on standard error while it
/// crosses the socket (`keychainfs: export: 48 of 120 MiB`), ended by a newline; like the other
/// progress lines, only on a terminal and never with `--quiet`.
final class TransferProgress {
    private let verb: String
    private let shown: Bool
    private var width = 0  // of the line on screen, so a shorter one blanks what is left of it

    init(_ verb: String, _ args: Arguments) {
        self.verb = verb
        shown = Progress.enabled(args)
    }

    func update(_ text: String) {
        guard shown else { return }
        let line = "keychainfs: \(verb): " + text
        let count = line.count
        Terminal.writeString(2, "\r" + line + String(repeating: " ", count: max(0, width - count)))
        width = count
    }

    /// The last state, then the newline; ends the line even when nothing more is to be said.
    func finish(_ text: String? = nil) {
        if let text { update(text) }
        guard width > 0 else { return }
        Terminal.writeString(2, "\n")
        width = 0
    }

    /// `done of total` in the unit that suits the total (MiB, KiB or bytes), both rounded alike.
    static func amount(_ done: Int, of total: Int) -> String {
        let (shift, unit) = total >= 1 << 20 ? (20, "MiB") : total >= 1 << 10 ? (10, "KiB") : (0, "bytes")
        func rounded(_ n: Int) -> Int { shift == 0 ? n : (n + (1 << (shift - 1))) >> shift }
        return "\(rounded(done)) of \(rounded(total)) \(unit)"
    }
}
