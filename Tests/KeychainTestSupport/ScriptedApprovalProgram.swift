import Foundation

/// A stand-in for a confirmation dialog, set as a vault's approval program: it notes each call's
/// arguments and answers from a file the test writes with `say`: `yes` approves, `passphrase`
/// prints the test vaults' passphrase, `wrong-passphrase` a wrong one, `hang` outlasts any
/// timeout, anything else (or nothing) refuses.
package struct ScriptedApprovalProgram {
    package let path: String
    package let answer: String
    package let calls: String

    /// Writes the program into `dir` (mode 0755), with no answer and no calls yet.
    package init(in dir: String) throws {
        path = dir + "/approve.sh"
        answer = dir + "/answer"
        calls = dir + "/calls"
        let script = """
            #!/bin/sh
            echo "$@" >> \(calls)
            case "$(cat \(answer) 2>/dev/null)" in
              yes) exit 0;;
              passphrase) echo "pass phrase 1"; exit 0;;
              wrong-passphrase) echo "guess"; exit 0;;
              hang) sleep 30; exit 0;;
              *) exit 1;;
            esac
            """
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        try? FileManager.default.removeItem(atPath: calls)
    }

    /// What the program answers from now on.
    package func say(_ text: String) throws { try text.write(toFile: answer, atomically: true, encoding: .utf8) }

    /// Each call's arguments, one line per call.
    package var callLines: [String] {
        ((try? String(contentsOfFile: calls, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}
