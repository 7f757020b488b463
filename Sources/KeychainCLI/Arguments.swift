/// A usage error: exit status 2 and a message naming the verb's help.
public struct UsageError: Error {
    public let message: String
    public init(_ message: String) { self.message = message }
}

/// Parses `security`-style arguments: single-letter flags (`-s VALUE`), long options
/// (`--json`, `--kdf VALUE`), repeated options, and positional arguments.
package struct Arguments: Sendable {
    private(set) var values: [String: [String]] = [:]
    private(set) var switches: Set<String> = []
    package private(set) var positionals: [String] = []

    /// - Parameters:
    ///   - valued: options that take a value (`-s`, `--kdf`).
    ///   - flags: options that take none (`-w` is listed here when it may stand alone).
    ///   - optionalValue: options whose value may be missing at the end of the line (`-w`).
    ///   - takesValue: whether an optional-value option takes the argument after it (with
    ///     `--pinentry`, only one that names a program); by default it always does.
    package init(_ args: [String], valued: Set<String>, flags: Set<String>, optionalValue: Set<String> = [],
                 takesValue: (_ option: String, _ next: String) -> Bool = { _, _ in true }) throws {
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let a = args[i]
            i += 1
            // A negative number (`security error -25300`) is an argument, not a flag.
            let negativeNumber = a.count > 1 && a.utf8.dropFirst().allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
            if onlyPositionals || !a.hasPrefix("-") || a == "-" || negativeNumber {
                positionals.append(a)
            } else if a == "--" {
                onlyPositionals = true
            } else if valued.contains(a) || optionalValue.contains(a) {
                if i < args.count && (valued.contains(a) || takesValue(a, args[i])) {
                    values[a, default: []].append(args[i])
                    i += 1
                } else if optionalValue.contains(a) {
                    switches.insert(a)
                } else {
                    throw UsageError("option \(a) needs a value")
                }
            } else if flags.contains(a) {
                switches.insert(a)
            } else {
                throw UsageError("unknown option \(a)")
            }
        }
    }

    package func value(_ name: String) -> String? { values[name]?.last }
    package func all(_ name: String) -> [String] { values[name] ?? [] }
    package func has(_ name: String) -> Bool { switches.contains(name) || values[name] != nil }
}
