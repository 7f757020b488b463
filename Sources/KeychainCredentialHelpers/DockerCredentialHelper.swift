import KeychainModel
import KeychainCrypto
import KeychainProtocol
import KeychainSystem

/// `docker-credential-keychainfs store|get|erase|list|version`: docker's credential helper
/// protocol (docker-credential-helpers) over the vault's internet passwords, with the attributes
/// of macOS's docker-credential-osxkeychain: label "Docker Credentials", server, protocol, port
/// and path from the server URL, account = username. Errors go to standard output with exit 1,
/// as docker's helpers do; docker matches "credentials not found in native keychain".
public enum DockerCredentialHelper {
    static let label = "Docker Credentials"
    static let notFound = "credentials not found in native keychain"

    struct Failure: Error { var message: String }

    public static func main(_ argv: [String]) -> Int32 {
        SecureBytes.smallestRegion = CurrentProcess.pageSize
        do {
            guard argv.count == 2 else { throw Failure(message: "Usage: docker-credential-keychainfs <store|get|erase|list|version>") }
            switch argv[1] {
            case "store": try store()
            case "get": try get()
            case "erase": try erase()
            case "list": try list()
            case "version": try HelperIO.write(1, "docker-credential-keychainfs (keychainfs) \(Release.version)\n")
            default: throw Failure(message: "Unknown credential action `\(argv[1])`")
            }
            return 0
        } catch let e as Failure {
            try? HelperIO.write(1, e.message + "\n")
        } catch let e as RegistryURL.Invalid {
            try? HelperIO.write(1, e.message + "\n")
        } catch let e as JSONCredentials.Malformed {
            try? HelperIO.write(1, e.message + "\n")
        } catch {
            let status = KeychainStatus(known: error) ?? .internalComponent
            try? HelperIO.write(1, "\(status.message) (\(status.rawValue))\n")
        }
        return 1
    }

    /// The server URL on standard input, trimmed. - Throws: "no credentials server URL" when empty.
    static func serverURL() throws -> String {
        let input = try HelperIO.readInput(stopAtBlankLine: false)
        defer { input.wipe() }
        let text = input.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let trimmed = text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
        guard !trimmed.isEmpty else { throw Failure(message: "no credentials server URL") }
        return String(trimmed)
    }

    /// Reads `{"ServerURL","Username","Secret"}` and stores it, replacing what the server had.
    static func store() throws {
        let input = try HelperIO.readInput(stopAtBlankLine: false)
        defer { input.wipe() }
        let creds = try JSONCredentials(parsing: input, secretKey: "secret")
        defer { creds.secret?.wipe() }
        guard let url = creds.fields["serverurl"], !url.isEmpty else { throw Failure(message: "no credentials server URL") }
        guard let username = creds.fields["username"], !username.isEmpty else { throw Failure(message: "no credentials username") }
        let server = try RegistryURL(url)
        let secret = try creds.secret ?? SecureBytes(count: 0)
        let items = InternetPasswords(client: try DaemonConnection.connect())
        // One item per server, as osxkeychain's Add deletes before it adds; only docker's own
        // (labelled) items, so a login never takes git's credential for the same host with it.
        for item in try items.find(labelled(server.query)) {
            if let ref = item.persistentRef { try items.delete(ref: ref) }
        }
        var attributes = server.query
        attributes[.account] = .string(username)
        attributes[.label] = .string(label)
        try items.addOrUpdate(attributes, primaryKey: server.query.merging([.account: .string(username)]) { a, _ in a }, secret: secret)
    }

    /// Prints `{"ServerURL":...,"Username":...,"Secret":...}` for the server named on standard input.
    static func get() throws {
        let url = try serverURL()
        let server = try RegistryURL(url)
        let items = InternetPasswords(client: try DaemonConnection.connect())
        // docker's own item first; else any for the server, as osxkeychain's Get matches.
        let found = try items.find(labelled(server.query), secrets: true, limit: 1).first
            ?? items.find(server.query, secrets: true, limit: 1).first
        guard let item = found, let secret = item.secret else {
            throw Failure(message: notFound)
        }
        defer { secret.wipe() }
        let head = Array("{\"ServerURL\":".utf8), user = Array(",\"Username\":".utf8), middle = Array(",\"Secret\":".utf8)
        let urlBytes = Array(url.utf8), account = Array((item.attributes[.account]?.text ?? "").utf8)
        let size = urlBytes.withUnsafeBytes { JSONString.encodedCount($0) } + account.withUnsafeBytes { JSONString.encodedCount($0) }
            + secret.withUnsafeBytes { JSONString.encodedCount($0) } + head.count + user.count + middle.count + 2
        let out = try SecureBytes(count: size)
        defer { out.wipe() }
        let written: Int = out.withUnsafeMutableBytes { o in
            var n = 0
            func raw(_ bytes: [UInt8]) { bytes.withUnsafeBytes { (o.baseAddress! + n).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }; n += bytes.count }
            raw(head)
            n += urlBytes.withUnsafeBytes { JSONString.write($0, to: o.baseAddress! + n) }
            raw(user)
            n += account.withUnsafeBytes { JSONString.write($0, to: o.baseAddress! + n) }
            raw(middle)
            n += secret.withUnsafeBytes { JSONString.write($0, to: o.baseAddress! + n) }
            raw(Array("}\n".utf8))
            return n
        }
        try out.withUnsafeBytes { try HelperIO.write(1, UnsafeRawBufferPointer(rebasing: $0[0..<written])) }
    }

    /// Deletes docker's credentials for the server. - Throws: "credentials not found in native
    /// keychain" when there are none.
    static func erase() throws {
        let server = try RegistryURL(try serverURL())
        let items = InternetPasswords(client: try DaemonConnection.connect())
        var deleted = false
        for item in try items.find(labelled(server.query)) {
            if let ref = item.persistentRef, try items.delete(ref: ref) { deleted = true }
        }
        guard deleted else { throw Failure(message: notFound) }
    }

    /// Prints `{"URL":"username",...}` for every item labelled "Docker Credentials".
    static func list() throws {
        let items = try InternetPasswords(client: DaemonConnection.connect()).find([.label: .string(label)])
        var entries: [(String, String)] = []
        for item in items {
            guard let url = RegistryURL.url(of: item.attributes) else { continue }
            entries.append((url, item.attributes[.account]?.text ?? ""))
        }
        entries.sort { $0.0 < $1.0 }  // Go's encoder sorts map keys
        var text = "{"
        for (i, (url, account)) in entries.enumerated() {
            text += (i == 0 ? "" : ",") + jsonText(url) + ":" + jsonText(account)
        }
        try HelperIO.write(1, text + "}\n")
    }

    static func labelled(_ query: Attributes) -> Attributes {
        query.merging([.label: .string(label)]) { _, l in l }
    }

    /// A non-secret string as a JSON string.
    static func jsonText(_ s: String) -> String {
        let bytes = Array(s.utf8)
        var out = [UInt8](repeating: 0, count: bytes.withUnsafeBytes { JSONString.encodedCount($0) })
        _ = out.withUnsafeMutableBytes { o in bytes.withUnsafeBytes { JSONString.write($0, to: o.baseAddress!) } }
        return String(decoding: out, as: UTF8.self)
    }
}
