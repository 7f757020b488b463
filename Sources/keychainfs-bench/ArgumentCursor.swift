/// Walks the command line for the option parsers of each mode: a flag's value is the next
/// argument, and a bad or missing one ends the program with the mode's usage.
final class ArgumentCursor {
    let args: [String]
    let usage: String
    private(set) var index: Int

    init(_ args: [String], from start: Int, usage: String) {
        self.args = args
        self.usage = usage
        index = start
    }

    /// The argument under the cursor, nil past the end.
    var current: String? { index < args.count ? args[index] : nil }

    func advance() { index += 1 }

    /// The value of flag `name`: the next argument.
    func value(_ name: String) -> String {
        index += 1
        guard index < args.count else { fail("\(name) needs a value\n\n" + usage) }
        return args[index]
    }

    /// A positive integer value (`_` and `,` allowed as digit separators).
    func positive(_ name: String) -> Int {
        guard let n = Int(value(name).filter { $0 != "_" && $0 != "," }), n > 0 else {
            fail("\(name): not a positive integer: \(args[index])")
        }
        return n
    }
}
