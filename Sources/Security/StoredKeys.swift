import KeychainModel
import KeychainCrypto
import KeychainProtocol

/// Private keys that stay in the daemon: a `SecKey` from the keychain holds its item's
/// persistent reference and public half, and each use is a `useKey` request that the daemon
/// answers with the result only (as Apple's securityd does for keys it holds).
enum StoredKeys {
    /// Runs `use` (sign, decrypt) of `algorithm` with the key `ref` names on `input`.
    /// - Throws: the daemon's status (`KeychainStatus`).
    static func use(_ ref: [UInt8], _ use: KeyUse, _ algorithm: SecKeyAlgorithm, input: UnsafeRawBufferPointer) throws -> SecureBytes {
        try send(KeyUseRequest(ref: ref, use: use, algorithm: algorithm.name, input: try SecureBytes(copying: input)))
    }

    /// ECDH of the key `ref` names with `peer` (Apple's external representation).
    static func exchange(_ ref: [UInt8], _ algorithm: SecKeyAlgorithm, peer: [UInt8], requestedSize: Int?,
                         sharedInfo: [UInt8]) throws -> SecureBytes {
        try send(KeyUseRequest(ref: ref, use: .keyExchange, algorithm: algorithm.name, peer: peer,
                               requestedSize: requestedSize.map { Int64($0) }, sharedInfo: sharedInfo, input: try SecureBytes(count: 0)))
    }

    /// The key's bytes (`SecKeyCopyExternalRepresentation`), read as the item's secret: audited
    /// as a read, refused with errSecDataNotAvailable for a key stored with `extr` false.
    static func bytes(_ ref: [UInt8]) throws -> SecureBytes {
        let query: Attributes = [.class: .itemClass(.key), .valuePersistentRef: .data(ref), .synchronizable: .synchronizableAny, .returnData: true]
        let response = try KeychainConnection.shared.send(Request(.copyMatching, query: query))
        guard case .value(.data(let secret)) = response.result else { throw KeychainStatus.decode }
        return secret
    }

    private static func send(_ use: KeyUseRequest) throws -> SecureBytes {
        let response = try KeychainConnection.shared.send(use.request)
        guard case .value(.data(let result)) = response.result else { throw KeychainStatus.decode }
        return result
    }
}
