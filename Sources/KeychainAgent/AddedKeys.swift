import KeychainClient
import KeychainCrypto
import KeychainModel
import KeychainProtocol
import KeychainSSHAgent
import KeychainSystem

/// `ssh-add FILE`: the key goes into the vault, as a non-extractable private key of the user's
/// first access group, labelled with its comment. From then on it is a vault key like any other:
/// the file may be deleted, and the daemon signs with it.
enum AddedKeys {
    /// The vault's type code for Ed25519 keys (KeychainKeys' `AsymmetricKey.ed25519TypeCode`:
    /// Apple has none, so keychainfs uses CSSM's vendor-defined range, 0x80000000 + 25519).
    static let ed25519Type: Int64 = 2_147_509_167

    /// Prefix of the alias (`alis`, the one free-text attribute Apple gives keys besides the
    /// label) of a key added with a lifetime (`ssh-add -t`); the Unix time it ends at follows, so
    /// any agent that lists the key later deletes it once that time has passed.
    static let expiryPrefix = "ssh-agent expires "

    /// Prefix of the application tag (`atag`) of a key added with destinations (`ssh-add -h`);
    /// the restriction as `ssh-add` sent it follows, and every agent checks it before use.
    static let destinationsPrefix = Array("ssh-agent restrict-destination-v00@openssh.com ".utf8)

    /// The add query and the key's bytes in Apple's representation, in guarded memory.
    /// - Parameter body: the message the ranges of `added` point into.
    /// - Throws: `AgentRefusal.unsupportedKey` for an RSA key whose primes are not odd;
    ///   `CryptoError` without guarded memory.
    static func item(_ added: AddedIdentity, body: UnsafeRawBufferPointer, now: Int64) throws -> (Attributes, SecureBytes) {
        var attributes: Attributes = [
            .class: .itemClass(.key), .keyClass: .number(1), .isExtractable: .bool(false), .neverExtractable: .bool(true),
            .canSign: .bool(true), .canDecrypt: .bool(false), .canDerive: .bool(false),
            .label: .string(added.comment.isEmpty ? "ssh key" : added.comment),
        ]
        let secret: SecureBytes
        switch added.key {
        case .ecdsa(let curve, let point, let scalar):
            // Apple's EC private form: 04 || X || Y || d, d left-padded to the field size.
            secret = try SecureBytes(count: point.count + curve.coordinateLength)
            secret.withUnsafeMutableBytes { out in
                out.copyBytes(from: point)
                let d = UnsafeRawBufferPointer(rebasing: body[scalar])
                UnsafeMutableRawBufferPointer(rebasing: out[(out.count - d.count)...]).copyMemory(from: d)
            }
            attributes[.keyType] = .number(73)
            attributes[.keySizeInBits] = .number(Int64(curve.bits))
        case .ed25519(_, let range):
            secret = try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: body[range.prefix(32)]))  // the seed
            attributes[.keyType] = .number(ed25519Type)
            attributes[.keySizeInBits] = .number(256)
        case .rsa(let exponent, let modulus, let d, let iqmp, let p, let q):
            secret = try RSAPrivateKeyDER.encode(modulus: modulus, exponent: exponent, body: body, d: d, iqmp: iqmp, p: p, q: q)
            attributes[.keyType] = .number(42)
            attributes[.keySizeInBits] = .number(Int64(SSHPublicKey.bitLength(modulus)))
        }
        attributes[.effectiveKeySize] = attributes[.keySizeInBits]
        if added.confirm {
            // ssh-add -c: each use asks the approval program, as a presence-gated key does.
            attributes[.accessControl] = AccessControl(protection: .whenUnlocked, flags: AccessControl.userPresence).value
        }
        if let destinations = added.destinations {
            attributes[.applicationTag] = .data(destinationsPrefix + destinations.encoded)
        }
        if let lifetime = added.lifetime {
            attributes[.alias] = .string(expiryPrefix + String(now + Int64(lifetime)))
        }
        return (attributes, secret)
    }

    /// The Unix time a key added with a lifetime ends at, from its alias; nil for a lasting key.
    static func expiry(_ attributes: Attributes) -> Int64? {
        guard case .string(let alias)? = attributes[.alias], alias.hasPrefix(expiryPrefix) else { return nil }
        return Int64(alias.dropFirst(expiryPrefix.count))
    }

    /// The hosts a key added with `ssh-add -h` may be used at, from its application tag: nil for
    /// a key without them.
    /// - Throws: `SSHAgentCodecError` for a tag that says it holds them but does not decode; such
    ///   a key is not offered at all.
    static func destinations(_ attributes: Attributes) throws -> DestinationRestriction? {
        guard case .data(let tag)? = attributes[.applicationTag], tag.starts(with: destinationsPrefix) else { return nil }
        return try DestinationRestriction(encoded: Array(tag.dropFirst(destinationsPrefix.count)))
    }
}
