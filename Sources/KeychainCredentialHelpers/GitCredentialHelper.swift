import KeychainModel
import KeychainCrypto
import KeychainSystem

/// `git-credential-keychainfs get|store|erase`: git's credential helper protocol over the
/// vault's internet passwords, with the attributes of macOS's git-credential-osxkeychain, so an
/// item reads the same through the CLI (`find-internet-password`), the mount and `import Security`.
public enum GitCredentialHelper {
    static let usage = "usage: git credential-keychainfs <get|store|erase>"

    /// Runs one helper action; returns the exit status (0, or 1 with a message on standard error).
    public static func main(_ argv: [String]) -> Int32 {
        SecureBytes.smallestRegion = CurrentProcess.pageSize
        guard argv.count >= 2 else {
            HelperIO.complain(usage)
            return 1
        }
        let action = argv[1]
        do {
            let credential = try GitCredential(parsing: HelperIO.readInput(stopAtBlankLine: true))
            defer { credential.password?.wipe() }
            // A protocol Apple's codes cannot name is not ours to store (git asks the next helper).
            if credential.unsupportedProtocol { return 0 }
            switch action {
            case "get": try get(credential)
            case "store": try store(credential)
            case "erase": try erase(credential)
            default: break  // git may learn new actions; helpers ignore the ones they do not know
            }
            return 0
        } catch let e as GitCredential.BadInput {
            HelperIO.complain("git-credential-keychainfs: bad input: \(e.line)")
        } catch {
            let status = KeychainStatus(known: error) ?? .internalComponent
            HelperIO.complain("git-credential-keychainfs: failed to \(action): \(status.message) (\(status.rawValue))")
        }
        return 1
    }

    /// Prints `password=` and, when git gave none, `username=` of the first matching item;
    /// nothing when none matches (not an error: git asks the user).
    static func get(_ c: GitCredential) throws {
        guard c.host != nil else { return }
        let items = try InternetPasswords(client: DaemonConnection.connect()).find(c.query, secrets: true, limit: 1)
        guard let item = items.first, let secret = item.secret else { return }
        defer { secret.wipe() }
        // One write of the whole answer, assembled in guarded memory.
        let username = c.username == nil ? "username=" + (item.attributes[.account]?.text ?? "") + "\n" : ""
        let head = Array("password=".utf8), tail = Array(("\n" + username).utf8)
        let answer = try SecureBytes(count: head.count + secret.count + tail.count)
        defer { answer.wipe() }
        answer.withUnsafeMutableBytes { out in
            head.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: head.count) }
            secret.withUnsafeBytes { if $0.count > 0 { (out.baseAddress! + head.count).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            tail.withUnsafeBytes { (out.baseAddress! + head.count + secret.count).copyMemory(from: $0.baseAddress!, byteCount: tail.count) }
        }
        try answer.withUnsafeBytes { try HelperIO.write(1, $0) }
    }

    /// Stores a complete credential (protocol, host, username and password), replacing the
    /// secret of an item with the same attributes; an incomplete one is refused, as osxkeychain does.
    /// git stores after every operation that authenticated: an item that already holds this
    /// password is left as it is (no new modification date, no change for the mount or sync).
    static func store(_ c: GitCredential) throws {
        guard c.protocolCode != nil, c.host != nil, c.username != nil, let password = c.password else {
            throw KeychainStatus.param
        }
        let items = InternetPasswords(client: try DaemonConnection.connect())
        for item in try items.find(c.query, secrets: true) {
            defer { item.secret?.wipe() }
            if c.isStored(in: item), let stored = item.secret, stored.constantTimeEquals(password) { return }
        }
        try items.addOrUpdate(c.query, primaryKey: c.query, secret: password)
    }

    /// Deletes every matching item (git needs protocol and host); when git gives a password,
    /// only the items holding exactly that password, so a rejected stale password never takes
    /// a newer one with it. Nothing matching is not an error.
    static func erase(_ c: GitCredential) throws {
        guard c.protocolCode != nil, c.host != nil else { throw KeychainStatus.param }
        let items = InternetPasswords(client: try DaemonConnection.connect())
        for item in try items.find(c.query, secrets: c.password != nil) {
            defer { item.secret?.wipe() }
            if let given = c.password {
                guard let stored = item.secret, stored.constantTimeEquals(given) else { continue }
            }
            if let ref = item.persistentRef { try items.delete(ref: ref) }
        }
    }
}
