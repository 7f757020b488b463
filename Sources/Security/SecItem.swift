import Glibc
import KeychainClient
import KeychainCore
import KeychainCrypto
import KeychainProtocol

/// The process's connection to the keychain daemon: `$KEYCHAINFS_SOCKET`, else the socket of
/// the default vault (`$KEYCHAINFS_VAULT` or the per-user one). Made on first use, remade once
/// when the daemon has gone away.
final class KeychainConnection: @unchecked Sendable {
    static let shared = KeychainConnection()
    private var mutex = pthread_mutex_t()
    private var client: DaemonClient?

    private init() { pthread_mutex_init(&mutex, nil) }

    func send(_ request: Request) throws -> Response {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        for attempt in 0..<2 {
            if client == nil { client = try Self.connect() }
            do {
                return try client!.send(request)
            } catch KeychainStatus.io where attempt == 0 {
                client = nil  // the daemon restarted: reconnect once
            } catch KeychainStatus.notAvailable where attempt == 0 {
                client = nil
            }
        }
        throw KeychainStatus.notAvailable
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
    } catch let s as KeychainStatus {
        return s.rawValue
    } catch {
        return KeychainStatus.param.rawValue
    }
}

private func returnKeys(_ attributes: Attributes) -> Bool {
    ["r_Data", "r_Attributes", "r_PersistentRef", "r_Ref"].contains { key in
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
        let (attrs, secret) = try Conversion.attributes(attributes, extractData: true)
        if returnKeys(attrs) && result == nil { throw KeychainStatus.param }
        let r = try KeychainConnection.shared.send(Request(.add, query: attrs, secrets: secret.map { [$0] } ?? []))
        result?.pointee = Conversion.object(r.result.result)
    }
}

/// Finds items (`SecItemCopyMatching`); `result` receives the shape the return keys and limit ask for.
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    status {
        let (attrs, _) = try Conversion.attributes(query, extractData: false)
        if returnKeys(attrs) && result == nil { throw KeychainStatus.param }
        let r = try KeychainConnection.shared.send(Request(.copyMatching, query: attrs))
        result?.pointee = Conversion.object(r.result.result)
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
        let (q, _) = try Conversion.attributes(query, extractData: false)
        _ = try KeychainConnection.shared.send(Request(.delete, query: q))
    }
}

private extension QueryResult {
    var result: QueryResult { self }
}
