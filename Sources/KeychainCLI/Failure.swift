import KeychainClient
import KeychainModel

/// What a failed command says, once: its lines for standard error, its object for `--json`
/// (on standard output), and its exit status. Never a secret: only Apple's sentences, paths,
/// names the command line gave, and what the daemon's status means here.
struct Failure {
    /// The keychain status; nil for a usage error (exit 2).
    let status: KeychainStatus?
    /// The first line: Apple's sentence, or the message of a usage or state error.
    let message: String
    /// The lines after it: what the status means here and what to do.
    let details: [String]
    let exit: Int32

    init(_ error: Error, vault: String?, verb: String?) {
        var status: KeychainStatus? = nil
        var message: String
        var details: [String] = []
        var exit = KeychainStatus.io.exitCode
        do { throw error } catch let e as UsageError {
            message = e.message
            exit = CLI.Exit.usage
        } catch let e as StateError {
            // A state error may carry its own second line (`keychainfs: ...`).
            let lines = e.message.split(separator: "\nkeychainfs: ", omittingEmptySubsequences: false).map(String.init)
            status = e.status
            message = lines[0]
            details = Array(lines.dropFirst())
        } catch let s as KeychainStatus {
            status = s
            message = s.message
            details = ErrorMeaning.lines(for: s, vault: vault, verb: verb)
        } catch let e as RuntimeDirectoryError {
            status = e.status
            message = e.status.message
            details = [e.description]
        } catch let e as VaultFileError {
            status = e.status
            message = e.description
            if e == .missing { details = ErrorMeaning.lines(for: .noSuchKeychain, vault: vault, verb: verb) }
        } catch {
            if let known = KeychainStatus(known: error) {  // out of guarded memory, a full disk, ...
                status = known
                message = known.message
            } else {
                status = .io
                message = "\(error)"
            }
        }
        if let status { exit = status.exitCode }
        self.status = status
        self.message = message
        self.details = details
        self.exit = exit
    }

    /// The lines for standard error, each prefixed `keychainfs: `.
    var text: String {
        ([message] + details).map { "keychainfs: \($0)\n" }.joined()
    }

    /// `{"error":"errSecItemNotFound","status":-25300,"message":"...","detail":"...","exit":44}`;
    /// a usage error is `{"error":"usage","message":"...","exit":2}`.
    var json: String {
        var out = "{\"error\":" + Output.jsonString(status?.name ?? "usage")
        if let status { out += ",\"status\":\(status.rawValue)" }
        out += ",\"message\":" + Output.jsonString(message)
        if !details.isEmpty { out += ",\"detail\":" + Output.jsonString(details.joined(separator: "\n")) }
        return out + ",\"exit\":\(exit)}"
    }
}
