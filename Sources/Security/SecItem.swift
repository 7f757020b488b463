import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol

/// The process's connections to the keychain daemon: `$KEYCHAINFS_SOCKET`, else the socket of
/// the default vault (`$KEYCHAINFS_VAULT` or the per-user one). A request takes an idle
/// connection or makes one, so threads calling at once are answered in parallel; at most
/// `maximumIdle` stay open between calls. A connection the daemon closed is remade once.
final class KeychainConnection: @unchecked Sendable {
    static let shared = KeychainConnection()
    static let maximumIdle = 8
    private var mutex = pthread_mutex_t()
    private var idle: [DaemonClient] = []

    private init() { pthread_mutex_init(&mutex, nil) }

    func send(_ request: Request) throws -> Response {
        for attempt in 0..<2 {
            let client = try take()
            do {
                let response = try client.send(request)
                put(client)
                return response
            } catch KeychainStatus.io where attempt == 0 {
                drain()  // the daemon restarted: its other connections are gone too
            } catch KeychainStatus.notAvailable where attempt == 0 {
                drain()
            } catch let status as KeychainStatus {
                // A keychain status is an answer: the connection is still good.
                if status != .io && status != .notAvailable { put(client) }
                throw status
            }
        }
        throw KeychainStatus.notAvailable
    }

    private func take() throws -> DaemonClient {
        pthread_mutex_lock(&mutex)
        let reused = idle.popLast()
        pthread_mutex_unlock(&mutex)
        return try reused ?? Self.connect()
    }

    private func put(_ client: DaemonClient) {
        pthread_mutex_lock(&mutex)
        if idle.count < Self.maximumIdle { idle.append(client) }
        pthread_mutex_unlock(&mutex)
    }

    private func drain() {
        pthread_mutex_lock(&mutex)
        idle.removeAll()
        pthread_mutex_unlock(&mutex)
    }

    /// What a status means here, for an error's description (`SecCopyErrorMessageString` keeps
    /// Apple's sentence alone): which daemon could not be reached, or that the vault is locked.
    func meaning(of status: KeychainStatus) -> String? {
        switch status {
        case .notAvailable:
            if let socket = Paths.environment("KEYCHAINFS_SOCKET") { return "no vault daemon at KEYCHAINFS_SOCKET=\(socket)" }
            return "no vault daemon for KEYCHAINFS_VAULT=\(Paths.canonical(Paths.defaultVault()))"
        case .interactionNotAllowed:
            guard let status = try? VaultStatus(decoding: send(BareRequest(.info).request)), status.isLocked else { return nil }
            return "the vault is locked: run keychainfs unlock-keychain"
        default:
            return nil
        }
    }

    static func connect() throws -> DaemonClient {
        do {
            if let socket = Paths.environment("KEYCHAINFS_SOCKET") { return try DaemonClient.connect(socketPath: socket) }
            return try DaemonClient.connect(vaultPath: Paths.canonical(Paths.defaultVault()))
        } catch {
            throw KeychainStatus.notAvailable  // no keychain can be reached
        }
    }
}

private func status(_ body: () throws -> Void) -> OSStatus {
    do {
        try body()
        return 0  // errSecSuccess
    } catch {
        return (KeychainStatus(known: error) ?? .param).rawValue
    }
}

private func returnKeys(_ attributes: Attributes) -> Bool {
    [AttributeKey.returnData, .returnAttributes, .returnPersistentRef, .returnRef].contains { key in
        guard let v = attributes[key] else { return false }
        if case .bool(let b) = v { return b }
        if case .number(let n) = v { return n != 0 }
        return true
    }
}

/// Adds an item (`SecItemAdd`). With return keys, `result` receives what they ask for.
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    status {
        let dict = attributes as NSDictionary
        if let identity = dict[kSecValueRef] as? SecIdentity {
            // Its certificate and its private key, as Apple's explode_identity (IdentityItems).
            let added = try IdentityItems.add(identity, parameters: dict, wantsResult: result != nil)  // not behind `result?.`
            result?.pointee = added
            return
        }
        if let certificate = dict[kSecValueRef] as? SecCertificate {
            // A certificate: its DER becomes the item, the daemon derives the attributes.
            let query = try CertificateItems.addQuery(parameters: dict)
            if returnKeys(query) && result == nil { throw KeychainStatus.param }
            let r = try KeychainConnection.shared.send(Request(.add, query: query, secrets: [CertificateItems.value(certificate)]))
            result?.pointee = try KeyItems.shape(r.result, query: query)
            return
        }
        if let ref = dict[kSecValueRef] {
            // A key object: its attributes and bytes become the item (KeyItems).
            guard let key = ref as? SecKey else { throw KeychainStatus.param }
            let query = try KeyItems.addQuery(key, parameters: dict)
            if returnKeys(query) && result == nil { throw KeychainStatus.param }
            let r = try KeychainConnection.shared.send(Request(.add, query: query, secrets: [KeyItems.keyValue(key)]))
            result?.pointee = try KeyItems.shape(r.result, query: query)
            return
        }
        let (attrs, secret) = try Conversion.attributes(dict, extractData: true)
        if returnKeys(attrs) && result == nil { throw KeychainStatus.param }
        let r = try KeychainConnection.shared.send(Request(.add, query: attrs, secrets: secret.map { [$0] } ?? []))
        result?.pointee = try KeyItems.shape(r.result, query: attrs)
    }
}

/// Finds items (`SecItemCopyMatching`); `result` receives the shape the return keys and limit ask for.
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    status {
        let (attrs, _) = try Conversion.attributes(query, extractData: false)
        if returnKeys(attrs) && result == nil { throw KeychainStatus.param }
        if Identities.isIdentityQuery(attrs) {
            // A join of two items, made here from two searches (SecIdentity.swift).
            let found = try Identities.search(attrs)
            if returnKeys(attrs) { result?.pointee = found }
            return
        }
        let r = try KeychainConnection.shared.send(Request(.copyMatching, query: attrs))
        result?.pointee = try KeyItems.shape(r.result, query: attrs)
    }
}

/// Changes every matching item (`SecItemUpdate`).
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    status {
        let (q, _) = try Conversion.attributes(query, extractData: false)
        let (changes, secret) = try Conversion.attributes(attributesToUpdate, extractData: true)
        _ = try KeychainConnection.shared.send(Request(.update, query: q, changes: changes, secrets: secret.map { [$0] } ?? []))
    }
}

/// Deletes every matching item (`SecItemDelete`).
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    status {
        let dict = query as NSDictionary
        if let identity = dict[kSecValueRef] as? SecIdentity {
            let rest = dict.mutableCopy() as! NSMutableDictionary
            rest.removeObject(forKey: kSecValueRef)
            try IdentityItems.delete(identity, query: try Conversion.attributes(rest, extractData: false).0)
            return
        }
        let (q, _) = try Conversion.attributes(query, extractData: false)
        if Identities.isIdentityQuery(q) { return try IdentityItems.deleteMatching(q) }  // certificates and their keys
        _ = try KeychainConnection.shared.send(Request(.delete, query: q))
    }
}

private extension QueryResult {
    var result: QueryResult { self }
}
