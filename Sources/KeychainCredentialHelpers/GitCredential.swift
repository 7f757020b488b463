import KeychainModel
import KeychainCrypto

/// A credential in git's helper protocol (gitcredentials(7)): `key=value` lines ending at a
/// blank line or EOF. The password stays in guarded memory; unknown keys are ignored, as git
/// asks helpers to do.
public struct GitCredential {
    /// Apple's four-character protocol code (`htps`), nil when none was given.
    public var protocolCode: String?
    /// True when a protocol was given that Apple's codes cannot name (git's osxkeychain
    /// helper then does nothing).
    var unsupportedProtocol = false
    public var host: String?
    public var port: Int64?
    public var path: String?
    public var username: String?
    public var password: SecureBytes?

    public struct BadInput: Error { public var line: String }

    /// git's protocols and Apple's codes for them, as git-credential-osxkeychain maps them.
    static let protocolCodes = ["https": "htps", "http": "http", "ftp": "ftp ", "ftps": "ftps",
                                "imap": "imap", "imaps": "imps", "smtp": "smtp"]

    /// Parses `input`. - Throws: `BadInput` for a line without `=` (its key part only, never a value).
    public init(parsing input: SecureBytes) throws {
        var lines: [Range<Int>] = []
        input.withUnsafeBytes { b in
            var start = 0
            for i in 0..<b.count where b[i] == 10 {
                lines.append(start..<i)
                start = i + 1
            }
            if start < b.count { lines.append(start..<b.count) }
        }
        for range in lines {
            if range.isEmpty { break }
            let equals: Int? = input.withUnsafeBytes { b in range.first { b[$0] == UInt8(ascii: "=") } }
            guard let equals else { throw BadInput(line: "a line without '='") }
            let key = input.withUnsafeBytes { String(decoding: $0[range.lowerBound..<equals], as: UTF8.self) }
            let valueRange = (equals + 1)..<range.upperBound
            if key == "password" {
                password = try input.slice(valueRange)
                continue
            }
            let value = input.withUnsafeBytes { String(decoding: $0[valueRange], as: UTF8.self) }
            switch key {
            case "protocol":
                protocolCode = Self.protocolCodes[value]
                unsupportedProtocol = protocolCode == nil
            case "host":
                // git sends `host=example.com:8443` for a port that is not the scheme's default.
                if let colon = value.lastIndex(of: ":"), let p = Int64(value[value.index(after: colon)...]), (0...65535).contains(p) {
                    host = String(value[..<colon])
                    port = p
                } else {
                    host = value
                }
            case "path": path = value
            case "username": username = value
            default: break
            }
        }
    }

    /// Whether `item` is this credential's own (its primary key, port and path included: a query
    /// without them matches items that have them).
    func isStored(in item: FoundItem) -> Bool {
        (item.attributes[.port]?.integer ?? 0) == (port ?? 0) && (item.attributes[.path]?.text ?? "") == (path ?? "")
    }

    /// The query that names this credential's items, with the attributes git-credential-osxkeychain
    /// uses: server, protocol, the default authentication type, and account, port and path when given.
    var query: Attributes {
        var q: Attributes = [.authenticationType: "dflt"]
        if let host { q[.server] = .string(host) }
        if let protocolCode { q[.protocol] = .string(protocolCode) }
        if let port { q[.port] = .number(port) }
        if let path { q[.path] = .string(path) }
        if let username { q[.account] = .string(username) }
        return q
    }
}
