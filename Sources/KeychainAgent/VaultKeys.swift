import KeychainClient
import KeychainCrypto
import KeychainModel
import KeychainProtocol
import KeychainSSHAgent
import KeychainSystem

/// A private key of the vault that the agent offers: its SSH public key, the comment shown by
/// `ssh-add -l` (the item's label) and the persistent reference the daemon signs with.
struct VaultIdentity {
    let key: SSHPublicKey
    let comment: String
    let ref: [UInt8]
    /// The Unix time a key added with `ssh-add -t` ends at; nil for a lasting key.
    var expiry: Int64? = nil
    /// The hosts a key added with `ssh-add -h` may be used at; nil for any.
    var destinations: DestinationRestriction? = nil

    func hasExpired(at now: Int64) -> Bool { expiry.map { $0 <= now } ?? false }
}

/// The vault's signing keys, through the daemon: listed with the caller's own access groups
/// (a key outside them is never seen) and used with `useKey`, so the private key never leaves
/// the daemon, each signature is audited there, and a locked vault's WhenUnlocked keys are
/// neither listed nor usable.
final class VaultKeys {
    private let connect: () throws -> DaemonClient
    private var client: DaemonClient?
    /// Keys from `ssh-add` are stored extractable (`ssh-agent --extractable`).
    private let storesExtractable: Bool
    /// `ssh-add -d`/`-D` delete keys from the vault (`ssh-agent --delete-removed`).
    let deletesRemoved: Bool

    init(connect: @escaping () throws -> DaemonClient, storesExtractable: Bool = false, deletesRemoved: Bool = false) {
        self.connect = connect
        self.storesExtractable = storesExtractable
        self.deletesRemoved = deletesRemoved
    }

    /// Deletes the key item from the vault (the daemon checks the caller may change its group).
    func delete(_ identity: VaultIdentity) throws {
        _ = try call(ItemDelete(query: [.class: .itemClass(.key), .valuePersistentRef: .data(identity.ref)]), ItemsReply.self)
    }

    /// Apple's key types (`kSecAttrKeyType` as a number): ECSECPrimeRandom and RSA.
    static let ellipticCurveType: Int64 = 73
    static let rsaType: Int64 = 42

    /// Every private key of the caller's groups that may sign and has a type SSH speaks, in
    /// the vault's order. A vault with none, or whose keys are all locked, gives none.
    func identities() throws -> [VaultIdentity] {
        let query: Attributes = [
            .class: .itemClass(.key), .keyClass: .number(1), .synchronizable: .synchronizableAny,
            .returnAttributes: .bool(true), .returnPersistentRef: .bool(true), .matchLimit: .matchLimitAll,
        ]
        let result: QueryResult
        do {
            result = try call(ItemSearch(query: query), ItemsReply.self).result
        } catch KeychainStatus.itemNotFound {
            return []
        }
        guard case .array(let values) = result else { return [] }
        let now = SystemClock.realtime().seconds
        var offered: [VaultIdentity] = []
        for item in values.compactMap(\.item) {
            guard let identity = Self.identity(item) else { continue }
            // A key added with a lifetime that has run out leaves the vault (ssh-add -t).
            if identity.hasExpired(at: now) {
                _ = try? call(ItemDelete(query: [.class: .itemClass(.key), .valuePersistentRef: .data(identity.ref)]), ItemsReply.self)
                continue
            }
            offered.append(identity)
        }
        return offered
    }

    /// Stores a key that `ssh-add` sent; a key the vault holds already counts as added, unless
    /// the add asks for a lifetime, a confirmation or destinations, which the stored key may not have: that is
    /// refused rather than answered as if the key now had them.
    /// - Throws: `AgentRefusal.unsupportedKey`; the daemon's status when it refuses.
    func add(_ added: AddedIdentity, body: UnsafeRawBufferPointer) throws {
        // Destinations are kept in the application tag, which makes the item another one to the
        // vault: a key stored already, without them or with others, would stay usable anywhere.
        if let destinations = added.destinations, let stored = try identities().first(where: { $0.key == added.publicKey }) {
            guard stored.destinations == destinations else { throw AgentRefusal.storedOtherwise }
            return
        }
        let (attributes, secret) = try AddedKeys.item(added, body: body, now: SystemClock.realtime().seconds,
                                                      extractable: storesExtractable)
        defer { secret.wipe() }
        do {
            _ = try call(ItemAdd(attributes: attributes, secret: secret), ItemsReply.self)
        } catch KeychainStatus.duplicateItem where added.lifetime == nil && !added.confirm && added.destinations == nil {
            return
        }
    }

    /// The SSH form of one found key item; nil for a key that may not sign or that SSH cannot name.
    static func identity(_ item: FoundItem) -> VaultIdentity? {
        let attributes = item.attributes
        switch attributes[.canSign] {
        case .bool(false)?, .number(0)?: return nil
        default: break
        }
        guard let ref = item.persistentRef, case .data(let publicBytes)? = attributes[ItemClass.publicKeyAttribute] else { return nil }
        let key: SSHPublicKey
        switch attributes[.keyType]?.numberValue {
        case AddedKeys.ed25519Type?:
            guard publicBytes.count == 32 else { return nil }
            key = .ed25519(publicBytes)
        case ellipticCurveType?:
            guard let blob = try? SSHPublicKeyBlob(uncompressedPoint: publicBytes) else { return nil }
            key = .ecdsa(blob)
        case rsaType?:
            guard let rsa = try? SSHPublicKey(pkcs1RSAPublicKey: publicBytes) else { return nil }
            key = rsa
        default:
            return nil
        }
        var comment = ""
        if case .string(let label)? = attributes[.label] { comment = label }
        // Destinations that do not decode: the key is not offered at all, never offered unrestricted.
        let destinations: DestinationRestriction?
        do { destinations = try AddedKeys.destinations(attributes) } catch { return nil }
        return VaultIdentity(key: key, comment: comment, ref: ref, expiry: AddedKeys.expiry(attributes), destinations: destinations)
    }

    /// Signs `data` with `identity` in the daemon and returns SSH's signature blob.
    /// - Throws: `AgentRefusal` when the flags ask for SHA-1 with RSA; the daemon's status when
    ///   it refuses (locked, denied, presence not approved).
    /// - Parameter relayed: the agent's client and bound host, for the daemon's audit line.
    func sign(_ data: [UInt8], with identity: VaultIdentity, flags: AgentSignFlags, for relayed: RelayedUse? = nil) throws -> [UInt8] {
        guard !identity.hasExpired(at: SystemClock.realtime().seconds) else { throw AgentRefusal.expired }
        let algorithm: String
        var rsa: RSASignatureAlgorithm?
        switch identity.key {
        case .ed25519:
            algorithm = "algid:sign:EdDSA:message-Ed25519"
        case .ecdsa(let blob):
            algorithm = "algid:sign:ECDSA:message-X962:SHA\(blob.curve.digestBits)"
        case .rsa:
            guard let chosen = RSASignatureAlgorithm(flags: flags) else { throw AgentRefusal.sha1Signature }
            rsa = chosen
            algorithm = "algid:sign:RSA:message-PKCS1v15:" + (chosen == .sha256 ? "SHA256" : "SHA512")
        }
        let input = try SecureBytes(copying: data)
        defer { input.wipe() }
        let reply = try call(KeyUseRequest(ref: identity.ref, use: .sign, algorithm: algorithm, input: input, relayed: relayed),
                             KeyUseReply.self)
        defer { reply.output.wipe() }
        let signature = reply.output.withUnsafeBytes { Array($0) }
        switch identity.key {
        case .ed25519: return try SSHSignatureBlob.ed25519(signature)
        case .ecdsa(let blob): return try SSHSignatureBlob.ecdsa(der: signature, curve: blob.curve)
        case .rsa: return SSHSignatureBlob.rsa(signature, algorithm: rsa!)
        }
    }

    /// Whether a session-bind's host key signed its session identifier. Ed25519 is checked here
    /// (libsodium); ECDSA and RSA by the daemon (`checkSignature`), since this agent links no
    /// library for them. Any doubt (a type not spoken, `ssh-rsa`, no daemon) is a no.
    func hostSigned(_ bind: SessionBind) -> Bool {
        guard let check = try? HostSignature(hostKey: bind.hostKey, signature: bind.signature) else { return false }
        if check.keyType == AddedKeys.ed25519Type {
            return Signature.verify(check.signature, of: bind.sessionID, publicKey: check.publicKey)
        }
        let request = SignatureCheck(keyType: check.keyType, publicKey: check.publicKey, algorithm: check.algorithm,
                                     signedData: bind.sessionID, signature: check.signature)
        return (try? call(request, StatusReply.self)) != nil
    }

    /// One request on this session's daemon connection, made on first use. A connection the
    /// daemon closed (it restarted) is made again once.
    private func call<Reply: TypedReply>(_ request: some TypedRequest, _ reply: Reply.Type) throws -> Reply {
        for attempt in 0..<2 {
            let daemon = try client ?? connect()
            client = daemon
            do {
                return try daemon.call(request, reply)
            } catch KeychainStatus.notAvailable where attempt == 0 {
                client = nil
            }
        }
        throw KeychainStatus.notAvailable
    }
}

/// A request the agent refuses itself, before asking the daemon.
enum AgentRefusal: Error {
    /// RSA with SHA-1 (`ssh-rsa` signatures): RFC 8332's SHA-2 flags are required.
    case sha1Signature
    /// The key's lifetime (`ssh-add -t`) has run out.
    case expired
    /// A key `ssh-add` may send but this agent does not store (an RSA key with even primes).
    case unsupportedKey
    /// `ssh-add -h` of a key the vault holds with other destinations or none.
    case storedOtherwise
}

/// The `authorized_keys` lines of the vault's signing keys, as `keychainfs ssh-public-key` prints them.
public enum SSHPublicKeys {
    /// The line of one key item returned with its attributes and reference; nil for a key the
    /// agent would not offer.
    public static func line(of item: FoundItem) -> String? {
        VaultKeys.identity(item).map { $0.key.openSSHLine(comment: $0.comment) }
    }

    /// OpenSSH's fingerprint of a key blob, `SHA256:` and unpadded base64 (`ssh-keygen -l`).
    static func fingerprint(of blob: [UInt8]) -> String {
        "SHA256:" + String(Base64.encode(SHA256.hash(blob)).prefix { $0 != "=" })
    }

    /// One line per key the agent would offer (`TYPE BASE64 LABEL`), only those labelled
    /// `label` when it is given, in the vault's order.
    public static func lines(label: String?, connect: @escaping () throws -> DaemonClient) throws -> [String] {
        try VaultKeys(connect: connect).identities()
            .filter { label == nil || $0.comment == label }
            .map { $0.key.openSSHLine(comment: $0.comment) }
    }
}
