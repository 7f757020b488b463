import KeychainClient
import KeychainModel
import KeychainCrypto
import KeychainProtocol
import Synchronization

/// The process's connections to the keychain daemon: `$KEYCHAINFS_SOCKET`, else the socket of
/// the default vault (`$KEYCHAINFS_VAULT` or the per-user one). A request takes a free slot
/// and its connection (making one in an empty slot), so threads calling at once are answered
/// in parallel; at most `slotCount` stay open between calls, and a thread that finds every
/// slot busy connects for its call alone. A connection the daemon closed is remade once.
final class KeychainConnection: Sendable {
    static let shared = KeychainConnection()
    static let slotCount = 8

    /// One kept connection. Its lock is held for a whole request, so the connection is used by
    /// one thread at a time and never leaves the lock (a `DaemonClient` is not `Sendable`).
    private final class Slot: Sendable {
        let client = Mutex<DaemonClient?>(nil)
    }

    private let slots = (0..<KeychainConnection.slotCount).map { _ in Slot() }

    /// No daemon could be reached: not retried.
    private struct Unreachable: Error {}

    private init() {}

    func send(_ request: Request) throws -> Response {
        for attempt in 0..<2 {
            do {
                return try sendOnce(request)
            } catch is Unreachable {
                throw KeychainStatus.notAvailable  // no keychain can be reached
            } catch let status as KeychainStatus where attempt == 0 && (status == .io || status == .notAvailable) {
                drain()  // the daemon restarted: its other connections are gone too
            }
        }
        throw KeychainStatus.notAvailable
    }

    /// Sends over the first free slot's connection, else over one of its own.
    private func sendOnce(_ request: Request) throws -> Response {
        for slot in slots {
            if let response = try slot.client.withLockIfAvailable({ try Self.exchange(request, over: &$0) }) { return response }
        }
        var own: DaemonClient?
        return try Self.exchange(request, over: &own)
    }

    /// Sends `request` over `client`, connecting first when there is none. A connection that
    /// failed is dropped; one that answered with a keychain status is still good and stays.
    /// - Throws: `Unreachable` when no connection can be made, else what the send threw.
    private static func exchange(_ request: Request, over client: inout DaemonClient?) throws -> Response {
        if client == nil {
            do { client = try connect() } catch { throw Unreachable() }
        }
        do {
            return try client!.send(request)
        } catch let status as KeychainStatus where status != .io && status != .notAvailable {
            throw status
        } catch {
            client = nil
            throw error
        }
    }

    /// Closes the kept connections that no request is using.
    private func drain() {
        for slot in slots { slot.client.withLockIfAvailable { $0 = nil } }
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
        let dict = query as NSDictionary
        let (changes, secret) = try updateAttributes(attributesToUpdate as NSDictionary)
        if let identity = dict[kSecValueRef] as? SecIdentity {
            // Its certificate, then its private key, as Apple's handleUpdateIdentity (IdentityItems).
            let rest = dict.mutableCopy() as! NSMutableDictionary
            rest.removeObject(forKey: kSecValueRef)
            return try IdentityItems.update(identity, query: try Conversion.attributes(rest, extractData: false).0,
                                            changes: changes, secret: secret)
        }
        let (q, _) = try Conversion.attributes(query, extractData: false)
        if Identities.isIdentityQuery(q) { return try IdentityItems.updateMatching(q, changes: changes, secret: secret) }
        _ = try KeychainConnection.shared.send(Request(.update, query: q, changes: changes, secrets: secret.map { [$0] } ?? []))
    }
}

/// The changes of `SecItemUpdate` and the new data. A `SecCertificate` as `kSecValueRef` is its
/// DER as the new data (Apple's `SecItemAttributesPrepare` expands it into the certificate's
/// attribute dictionary, which holds its data; the daemon derives the attributes from it).
private func updateAttributes(_ dict: NSDictionary) throws -> (Attributes, SecureBytes?) {
    guard let certificate = dict[kSecValueRef] as? SecCertificate else { return try Conversion.attributes(dict, extractData: true) }
    guard dict[kSecValueData] == nil else { throw KeychainStatus.param }
    let rest = dict.mutableCopy() as! NSMutableDictionary
    rest.removeObject(forKey: kSecValueRef)
    let (changes, _) = try Conversion.attributes(rest, extractData: false)
    return (changes, try CertificateItems.value(certificate))
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
