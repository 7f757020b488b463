import KeychainModel

/// A registry's server URL split as docker-credential-osxkeychain splits it: `https` (also for
/// a URL without a scheme) or `http`, the host name, the port when given, the path; the query
/// is dropped.
public struct RegistryURL: Equatable {
    public var secure: Bool
    public var host: String
    public var port: Int64?
    public var path: String

    public struct Invalid: Error { public var message: String }

    /// - Throws: `Invalid` for another scheme, a URL without a host or a port that is not a number.
    public init(_ text: String) throws {
        var rest = Substring(text)
        if let scheme = rest.firstRange(of: "://") {
            let name = rest[..<scheme.lowerBound].lowercased()
            guard name == "https" || name == "http" else { throw Invalid(message: "unsupported scheme: " + name) }
            secure = name == "https"
            rest = rest[scheme.upperBound...]
        } else {
            secure = true
            if rest.hasPrefix("//") { rest = rest.dropFirst(2) }
        }
        if let cut = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<cut] }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash]
        path = String(rest[slash...])
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        // A bracketed IPv6 literal keeps its colons; a port follows the closing bracket.
        let portColon: Substring.Index?
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            portColon = authority[close...].firstIndex(of: ":")
            host = String(authority[authority.index(after: authority.startIndex)..<close])
        } else {
            portColon = authority.lastIndex(of: ":")
            host = String(authority[..<(portColon ?? authority.endIndex)])
        }
        if let colon = portColon {
            let digits = authority[authority.index(after: colon)...]
            if !digits.isEmpty {
                guard let p = Int64(digits), (0...65535).contains(p) else { throw Invalid(message: "invalid port in URL") }
                port = p == 0 ? nil : p  // port 0 is the keychain's "no port"
            }
        }
        guard !host.isEmpty else { throw Invalid(message: "no hostname in URL") }
    }

    /// The attributes that name this server's items: server, protocol, and port and path when set.
    public var query: Attributes {
        var q: Attributes = [.server: .string(host), .protocol: .string(secure ? "htps" : "http")]
        if let port { q[.port] = .number(port) }
        if !path.isEmpty { q[.path] = .string(path) }
        return q
    }

    /// The URL an item's attributes name back (`docker-credential-keychainfs list`).
    public static func url(of attributes: Attributes) -> String? {
        guard let host = attributes[.server]?.text, !host.isEmpty else { return nil }
        let scheme = attributes[.protocol]?.text == "http" ? "http" : "https"
        let port = attributes[.port]?.integer.flatMap { $0 == 0 ? nil : ":\($0)" } ?? ""
        let name = host.contains(":") ? "[" + host + "]" : host
        return scheme + "://" + name + port + (attributes[.path]?.text ?? "")
    }
}
