import KeychainKeys
import KeychainModel
import KeychainProtocol

/// `checkSignature`: a public key's signature checked for a client that links no library for
/// the key's type. Public data only: no item, no caller's group, no audit line.
enum SignatureChecks {
    /// - Throws: errSecUnimplemented for an algorithm name that is not a signature's;
    ///   errSecParam for a key that does not decode or does not fit the algorithm;
    ///   errSecVerifyFailed for a signature the key did not make.
    static func check(_ request: SignatureCheck) throws -> Outcome {
        guard let algorithm = AppleAlgorithm(rawName: request.algorithm) else { throw KeychainStatus.unimplemented }
        let key: AsymmetricKey
        do {
            key = try request.publicKey.withUnsafeBytes { try AsymmetricKey.apple(type: request.keyType, isPrivate: false, $0) }
        } catch {
            throw KeychainStatus.param
        }
        let valid: Bool
        do {
            valid = try request.signedData.withUnsafeBytes { data in
                switch algorithm {
                case .ecdsa(let hash, let message):
                    guard key.appleTypeCode == 73 else { throw KeychainStatus.param }
                    let digest = try AppleAlgorithm.digest(data, hash: hash, message: message)
                    return try key.verify(signature: request.signature, digest: digest, hash: hash, scheme: .ecdsaX962)
                case .rsaSignature(let scheme, let hash, let message):
                    guard key.appleTypeCode == 42 else { throw KeychainStatus.param }
                    let digest = try AppleAlgorithm.digest(data, hash: hash, message: message)
                    return try key.verify(signature: request.signature, digest: digest, hash: hash, scheme: scheme)
                case .ed25519:
                    guard key.appleTypeCode == AsymmetricKey.ed25519TypeCode else { throw KeychainStatus.param }
                    return try key.verify(signature: request.signature, message: data)
                default:
                    throw KeychainStatus.unimplemented
                }
            }
        } catch let status as KeychainStatus {
            throw status
        } catch {
            valid = false  // a signature of the wrong shape is one the key did not make
        }
        guard valid else { throw KeychainStatus.verifyFailed }
        return .reply(StatusReply())
    }
}
