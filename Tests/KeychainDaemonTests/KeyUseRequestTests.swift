import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainKeys
import KeychainProtocol
import KeychainSystem
import XCTest
@testable import KeychainDaemon

/// useKey through the real handlers: a stored private key signs, decrypts and agrees in the
/// daemon under the rules of a read (groups, lock, presence), its bytes stay there when it is
/// not extractable, and `pubk` is the daemon's.
final class KeyUseRequestTests: XCTestCase {
    private var d: InProcessDaemon!
    let sign = "algid:sign:ECDSA:message-X962:SHA256"

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop() }

    /// Adds `key` as a private key item; returns its persistent reference.
    func store(_ key: AsymmetricKey, _ extra: Attributes = [:]) throws -> [UInt8] {
        var query: Attributes = ["class": "keys", "kcls": .number(1), "type": .number(key.appleTypeCode),
                                 "klbl": .data(DigestAlgorithm.sha1.hash(key.publicBytes())), "pubk": .data([1, 2, 3]),
                                 "r_PersistentRef": true, "r_Attributes": true]
        for (k, v) in extra { query[k] = v }
        let r = try d.call(Request(.add, query: query, secrets: [try key.privateBytes()]))
        XCTAssertEqual(r.status, .success)
        guard case .value(.item(let item)) = r.result, let ref = item.persistentRef else {
            XCTFail("no reference: \(r.result)")
            return []
        }
        XCTAssertEqual(item.attributes["pubk"], .data(key.publicBytes()), "the daemon sets pubk from the key, not the caller")
        return ref
    }

    func use(_ ref: [UInt8], _ use: String = "sign", algorithm: String? = nil, input: [UInt8] = Array("message".utf8),
             options extra: Options = [:], as caller: CallerIdentity = InProcessDaemon.owner) throws -> Response {
        var options: Options = ["use": .string(use), "algorithm": .string(algorithm ?? sign)]
        for (k, v) in extra { options[k] = v }
        return try d.call(Request(.useKey, query: ["v_PersistentRef": .data(ref)], options: options,
                                  secrets: [try SecureBytes(copying: input)]), as: caller)
    }

    func bytes(_ r: Response) -> [UInt8]? {
        guard case .value(.data(let d)) = r.result else { return nil }
        return d.withUnsafeBytes { Array($0) }
    }

    func testStoredKeySignsAndItsBytesStayWhenNotExtractable() throws {
        let key = try AsymmetricKey.generate(.p256)
        let ref = try store(key, ["extr": .bool(false)])
        let r = try use(ref)
        XCTAssertEqual(r.status, .success)
        let signature = try XCTUnwrap(bytes(r))
        let digest = DigestAlgorithm.sha256.hash(Array("message".utf8))
        XCTAssertTrue(try key.publicKey().verify(signature: signature, digest: digest, hash: .sha256, scheme: .ecdsaX962))
        let read = try d.call(Request(.copyMatching, query: ["v_PersistentRef": .data(ref), "r_Data": true]))
        XCTAssertEqual(read.status, .dataNotAvailable, "a non-extractable key is never read")
        XCTAssertNil(bytes(read))
        let attributes = try d.call(Request(.copyMatching, query: ["v_PersistentRef": .data(ref), "r_Attributes": true]))
        XCTAssertEqual(attributes.status, .success, "its attributes are readable")
    }

    /// A relay's use (the SSH agent's) gets its own audit line naming its client and host. Only
    /// keychainfs's own executables relay, and only for their own user or root.
    func testARelayedUseIsAuditedWithItsClientAndOnlyKeychainfsRelays() throws {
        let key = try AsymmetricKey.generate(.p256)
        let ref = try store(key)
        let relayed = RelayedUse(uid: geteuid(), pid: 4242, executable: "/usr/bin/ssh", host: "SHA256:abc")
        // The in-process daemon's executable is this test bundle's: it stands for keychainfs here.
        var relay = InProcessDaemon.owner
        relay.executable = ProcessFiles.executable(of: getpid())
        let algorithm = sign
        func relayedSign(_ relayed: RelayedUse?, as caller: CallerIdentity) throws -> KeychainStatus {
            try d.call(KeyUseRequest(ref: ref, use: .sign, algorithm: algorithm, input: try SecureBytes(copying: [1]), relayed: relayed).request,
                       as: caller).status
        }
        for _ in 0..<2 { XCTAssertEqual(try relayedSign(relayed, as: relay), .success) }
        try d.daemon.auditLog?.flushRepeats()
        let log = try String(contentsOfFile: d.vaultPath + ".audit", encoding: .utf8)
        let lines = log.split(separator: "\n").filter { $0.contains("\tsign\t") }
        XCTAssertEqual(lines.count, 2, "a line per relayed use: \(lines)")
        XCTAssertTrue(lines.allSatisfy { $0.contains(" for-uid=\(geteuid()) for-pid=4242 for-host=SHA256:abc for-exe=/usr/bin/ssh\t") }, "\(lines)")

        XCTAssertEqual(try relayedSign(relayed, as: InProcessDaemon.owner), .param, "another program may not name a client")
        var other = relayed
        other.uid = geteuid() == 0 ? 1000 : geteuid() + 1
        XCTAssertEqual(try relayedSign(other, as: relay), .param, "another user")
        var halfRelayed = KeyUseRequest(ref: ref, use: .sign, algorithm: sign, input: try SecureBytes(copying: [1])).request
        halfRelayed.options[.forPID] = .number(1)
        XCTAssertEqual(try d.call(halfRelayed).status, .param, "for-pid without for-uid")
    }

    /// A key's protection only tightens: no update makes a non-extractable key extractable or a
    /// sensitive key readable, and `next`/`asen` do not change.
    func testAnUpdateCannotLoosenAKeysProtection() throws {
        let ref = try store(try AsymmetricKey.generate(.p256), ["extr": .bool(false), "sens": .bool(true)])
        func update(_ changes: Attributes) throws -> KeychainStatus {
            try d.call(Request(.update, query: ["class": "keys", "v_PersistentRef": .data(ref)], changes: changes)).status
        }
        XCTAssertEqual(try update(["extr": .bool(true)]), .param)
        XCTAssertEqual(try update(["extr": .number(1)]), .param)
        XCTAssertEqual(try update(["sens": .bool(false)]), .param)
        XCTAssertEqual(try update(["next": .bool(false)]), .param)
        XCTAssertEqual(try update(["asen": .bool(false)]), .param)
        XCTAssertEqual(try update(["labl": "renamed", "extr": .bool(false)]), .success, "tightening or keeping is fine")
        let read = try d.call(Request(.copyMatching, query: ["v_PersistentRef": .data(ref), "r_Data": true]))
        XCTAssertEqual(read.status, .dataNotAvailable, "still never read")
        let open = try store(try AsymmetricKey.generate(.p256))
        XCTAssertEqual(try d.call(Request(.update, query: ["class": "keys", "v_PersistentRef": .data(open)], changes: ["extr": .bool(false)])).status,
                       .success, "an extractable key may become non-extractable")
    }

    /// A symmetric key (`kcls` 2) has no public half: 32 bytes of it would pass as an Ed25519
    /// public key, so no `pubk` is derived, and none is returned.
    func testASymmetricKeysBytesNeverBecomeItsPubk() throws {
        let secret = [UInt8](repeating: 0x5a, count: 32)
        let r = try d.call(Request(.add, query: ["class": "keys", "kcls": .number(2), "labl": "aes", "r_Attributes": true, "r_PersistentRef": true],
                                   secrets: [try SecureBytes(copying: secret)]))
        XCTAssertEqual(r.status, .success)
        XCTAssertNil(r.result.value?.item?.attributes["pubk"], "no public key for a symmetric key")
        let found = try d.call(Request(.copyMatching, query: ["class": "keys", "labl": "aes", "r_Attributes": true, "r_PersistentRef": true]))
        XCTAssertNil(found.result.value?.item?.attributes["pubk"], "none derived at a search either")
    }

    /// A raw RSA signature is the private operation, which decrypts: a key that may not decrypt
    /// does not sign raw (errSecKeyUsageIncorrect), while it still signs with padding.
    func testRawRSASignatureNeedsTheRightToDecrypt() throws {
        let key = try AsymmetricKey.generateRSA(bits: 2048)
        let ref = try store(key, ["decr": .bool(false)])
        let block = [UInt8](repeating: 0, count: 255) + [7]
        XCTAssertEqual(try use(ref, algorithm: "algid:sign:RSA:raw", input: block).status, .keyUsageIncorrect)
        XCTAssertEqual(try use(ref, algorithm: "algid:sign:RSA:message-PKCS1v15:SHA256").status, .success)
    }

    func testExtractableKeyIsReadAndPubkIsTheDaemons() throws {
        let key = try AsymmetricKey.generate(.p384)
        let ref = try store(key)
        let read = try d.call(Request(.copyMatching, query: ["v_PersistentRef": .data(ref), "r_Data": true]))
        XCTAssertEqual(bytes(read), try key.privateBytes().withUnsafeBytes { Array($0) })
        let forged = try d.call(Request(.update, query: ["v_PersistentRef": .data(ref)], changes: ["pubk": .data([4])]))
        XCTAssertEqual(forged.status, .noSuchAttr)
    }

    func testStoredEd25519KeySignsTheMessageWhole() throws {
        let key = try AsymmetricKey.generateEd25519()
        let ref = try store(key, ["extr": .bool(false)])
        let attributes = try d.call(Request(.copyMatching, query: ["v_PersistentRef": .data(ref), "r_Attributes": true]))
        guard case .value(.item(let item)) = attributes.result, case .data(let pubk)? = item.attributes["pubk"] else {
            return XCTFail("no pubk: \(attributes.result)")
        }
        XCTAssertEqual(pubk.count, 32)
        let message = Array("ssh-agent sign request".utf8)
        let signature = try XCTUnwrap(bytes(try use(ref, algorithm: "algid:sign:EdDSA:message-Ed25519", input: message)))
        let publicKey = try pubk.withUnsafeBytes {
            try AsymmetricKey.apple(type: AsymmetricKey.ed25519TypeCode, isPrivate: false, $0)
        }
        XCTAssertTrue(try message.withUnsafeBytes { try publicKey.verify(signature: signature, message: $0) })
        XCTAssertEqual(try use(ref).status, .unimplemented, "ECDSA is not for an Ed25519 key")
    }

    func testDecryptionAndKeyExchangeReturnOnlyTheResult() throws {
        let rsa = try AsymmetricKey.generateRSA(bits: 2048)
        let rsaRef = try store(rsa, ["extr": .bool(false)])
        let plain = Array("to the daemon".utf8)
        let ciphertext = try plain.withUnsafeBytes { try rsa.publicKey().encrypt($0, padding: .oaep(.sha256)) }
        let r = try use(rsaRef, "decrypt", algorithm: "algid:encrypt:RSA:OAEP:SHA256", input: ciphertext)
        XCTAssertEqual(bytes(r), plain)
        XCTAssertEqual(try use(rsaRef, "decrypt", algorithm: "algid:encrypt:RSA:OAEP:SHA256", input: [1, 2, 3]).status, .param)

        let ec = try AsymmetricKey.generate(.p256)
        let ecRef = try store(ec)
        let peer = try AsymmetricKey.generate(.p256)
        let exchange = try use(ecRef, "keyExchange", algorithm: "algid:keyexchange:ECDH", input: [],
                               options: ["peer": .data(peer.publicBytes())])
        let expected = try peer.sharedSecret(with: ec.publicKey()).withUnsafeBytes { Array($0) }
        XCTAssertEqual(bytes(exchange), expected)
        XCTAssertEqual(try use(ecRef, "keyExchange", algorithm: "algid:keyexchange:ECDH", input: [],
                               options: ["peer": .data([4, 1])]).status, .param, "a peer that is not a key")
    }

    func testRefusals() throws {
        let ref = try store(try AsymmetricKey.generate(.p256))
        XCTAssertEqual(try use(ref, algorithm: "algid:sign:ECDSA:nonsense").status, .unimplemented)
        XCTAssertEqual(try use(ref, algorithm: "algid:sign:RSA:message-PKCS1v15:SHA256").status, .unimplemented,
                       "an algorithm of the other key kind")
        XCTAssertEqual(try use(ref, "export").status, .param)
        XCTAssertEqual(try d.call(Request(.useKey, query: ["v_PersistentRef": .data(ref)],
                                          options: ["use": "sign", "algorithm": .string(sign)])).status, .param, "no input")
        XCTAssertEqual(try use(ref, as: InProcessDaemon.outsider).status, .itemNotFound, "outside the key's groups")
        XCTAssertEqual(try use(Array(ref.dropLast()) + [ref.last! ^ 1]).status, .itemNotFound)
        // A public key item does not sign.
        let pub = try AsymmetricKey.generate(.p256).publicKey()
        let r = try d.call(Request(.add, query: ["class": "keys", "kcls": .number(0), "type": .number(73), "r_PersistentRef": true],
                                   secrets: [try SecureBytes(copying: pub.publicBytes())]))
        guard case .value(.persistentRef(let pubRef)) = r.result else { return XCTFail("\(r.result)") }
        XCTAssertEqual(try use(pubRef).status, .itemNotFound)
    }

    func testLockedVaultRefusesUse() throws {
        let ref = try store(try AsymmetricKey.generate(.p256))
        d.daemon.vault.lock()
        XCTAssertEqual(try use(ref).status, .interactionNotAllowed)
    }

    func testPresenceGatedKeyAsksTheApprovalProgramForEachUse() throws {
        let control = AccessControl(protection: .whenUnlocked, flags: AccessControl.userPresence)
        let ref = try store(try AsymmetricKey.generate(.p256), ["accc": control.value])
        XCTAssertEqual(try use(ref).status, .interactionNotAllowed, "no program to ask")
        XCTAssertEqual(try d.call(Request(.setSettings, options: ["approval-program": "/bin/false"])).status, .success)
        XCTAssertEqual(try use(ref).status, .userCanceled, "denied")
        XCTAssertEqual(try d.call(Request(.setSettings, options: ["approval-program": "/bin/true"])).status, .success)
        XCTAssertEqual(try use(ref).status, .success, "approved")
        let failUI = try d.call(Request(.useKey, query: ["v_PersistentRef": .data(ref), "u_AuthUI": "u_AuthUIF"],
                                        options: ["use": "sign", "algorithm": .string(sign)],
                                        secrets: [try SecureBytes(copying: [1])]))
        XCTAssertEqual(failUI.status, .interactionNotAllowed, "kSecUseAuthenticationUIFail asks nobody")
    }
}
