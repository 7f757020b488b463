import Foundation
import KeychainTestSupport
import Security
import XCTest

/// Private keys that stay in the daemon (as Apple's securityd keeps them): a key read back with
/// `kSecReturnRef` signs, decrypts and agrees through the daemon, `kSecAttrIsExtractable` false
/// keeps its bytes in the vault, the lock and the access groups apply to each use, and each use
/// is in the audit log. Through the real daemon.
final class SecKeyDaemonTests: SecItemConformanceCase {
    var dir: URL!
    let accounts = TestAccounts()

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("kcfs-keyuse-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        accounts.remove()
        try? FileManager.default.removeItem(at: dir)
    }

    /// A new permanent key pair of `type` whose private key has `extra` attributes; returns the
    /// private key as the keychain gives it back for its tag.
    func storedKey(_ tag: Data, type: CFString = kSecAttrKeyTypeECSECPrimeRandom, bits: Int = 256,
                   _ extra: [String: Any] = [:]) throws -> SecKey {
        var priv: [String: Any] = [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag]
        for (k, v) in extra { priv[k] = v }
        var error: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: bits,
                                     kSecPrivateKeyAttrs as String: priv]
        guard SecKeyCreateRandomKey(params as CFDictionary, &error) != nil else { throw error!.takeRetainedValue() as Error }
        let (status, result) = copyMatching(keyQuery(tag).merging([kSecReturnRef as String: true]) { $1 })
        assertStatus(status, errSecSuccess, "r_Ref")
        return try XCTUnwrap(result as? SecKey)
    }

    func keyQuery(_ tag: Data) -> [String: Any] { [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag] }

    func errorCode(_ error: Unmanaged<CFError>?) -> Int? { error.map { CFErrorGetCode($0.takeRetainedValue()) } }

    func sign(_ key: SecKey, _ message: Data) -> (Data?, Int?) {
        var error: Unmanaged<CFError>?
        let sig = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data?
        return (sig, errorCode(error))
    }

    /// SPKI DER for a P-256 point: the fixed AlgorithmIdentifier (id-ecPublicKey, prime256v1).
    func spkiP256(_ point: Data) -> Data {
        Data([0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
              0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00]) + point
    }

    func openssl(_ args: [String]) throws -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }

    // MARK: Using a key the process cannot read

    func testNonExtractableKeySignsAndOpenSSLVerifies() throws {
        let tag = Data(unique().utf8)
        let key = try storedKey(tag, [kSecAttrIsExtractable as String: false])
        XCTAssertTrue(SecKeyIsAlgorithmSupported(key, .sign, .ecdsaSignatureMessageX962SHA256))
        let message = Data("signed in the daemon".utf8)
        let (signature, code) = sign(key, message)
        XCTAssertNil(code)
        let pub = try XCTUnwrap(SecKeyCopyPublicKey(key), "the public half is here without the private one")
        var error: Unmanaged<CFError>?
        let point = try XCTUnwrap(SecKeyCopyExternalRepresentation(pub, &error) as Data?)
        XCTAssertEqual(point.count, 65)
        let files = (dir.appendingPathComponent("pub.der"), dir.appendingPathComponent("msg"), dir.appendingPathComponent("sig"))
        try spkiP256(point).write(to: files.0)
        try message.write(to: files.1)
        try XCTUnwrap(signature).write(to: files.2)
        XCTAssertEqual(try openssl(["dgst", "-sha256", "-verify", files.0.path, "-keyform", "DER", "-signature", files.2.path, files.1.path]), 0)
        try Data("another message".utf8).write(to: files.1)
        XCTAssertEqual(try openssl(["dgst", "-sha256", "-verify", files.0.path, "-keyform", "DER", "-signature", files.2.path, files.1.path]), 1,
                       "the signature is over the message given")
        XCTAssertTrue(SecKeyVerifySignature(pub, .ecdsaSignatureMessageX962SHA256, message as CFData, signature! as CFData, &error))
    }

    func testNonExtractableKeyBytesAreNeverReturned() throws {
        let tag = Data(unique().utf8)
        let key = try storedKey(tag, [kSecAttrIsExtractable as String: false])
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCopyExternalRepresentation(key, &error))
        XCTAssertEqual(errorCode(error), Int(errSecDataNotAvailable), "macOS's status for exporting a non-extractable key")
        assertStatus(dataOf(keyQuery(tag)).status, errSecDataNotAvailable, "r_Data")
        let both = copyMatching(keyQuery(tag).merging([kSecReturnRef as String: true, kSecReturnData as String: true]) { $1 })
        assertStatus(both.status, errSecDataNotAvailable, "r_Ref with r_Data")
        let attrs = try XCTUnwrap(SecKeyCopyAttributes(key) as? [String: Any])
        XCTAssertNil(attrs[kSecValueData as String], "no key bytes among the attributes")
        XCTAssertEqual(attrs[kSecAttrApplicationTag as String] as? Data, tag)
        XCTAssertEqual(attrs[kSecAttrKeyClass as String] as? String, "1")
        XCTAssertEqual(attrs[kSecAttrIsExtractable as String] as? Int, 0)
        XCTAssertEqual(key.description, "<SecKeyRef key type: ECPrivateKey, block size: 256 bits>")
    }

    func testExtractableStoredKeyIsReadThroughTheDaemon() throws {
        let tag = Data(unique().utf8)
        let key = try storedKey(tag)  // kSecAttrIsExtractable defaults to true
        var error: Unmanaged<CFError>?
        let bytes = try XCTUnwrap(SecKeyCopyExternalRepresentation(key, &error) as Data?)
        XCTAssertEqual(bytes.count, 97, "04 || X || Y || K")
        XCTAssertEqual(dataOf(keyQuery(tag)).data, bytes)
        let copy = try XCTUnwrap(SecKeyCreateWithData(bytes as CFData, [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                                                                        kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, &error))
        XCTAssertEqual(copy, key, "the same key, held here or by the daemon")
    }

    func testStoredKeysDecryptAndAgreeInTheDaemon() throws {
        var error: Unmanaged<CFError>?
        let rsa = try storedKey(Data(unique().utf8), type: kSecAttrKeyTypeRSA, bits: 2048, [kSecAttrIsExtractable as String: false])
        let plain = Data("for the daemon's key".utf8)
        let oaep = try XCTUnwrap(SecKeyCreateEncryptedData(SecKeyCopyPublicKey(rsa)!, .rsaEncryptionOAEPSHA256, plain as CFData, &error))
        XCTAssertEqual(SecKeyCreateDecryptedData(rsa, .rsaEncryptionOAEPSHA256, oaep, &error) as Data?, plain)
        XCTAssertNil(SecKeyCreateDecryptedData(rsa, .rsaEncryptionOAEPSHA256, Data(count: 256) as CFData, &error))
        XCTAssertEqual(errorCode(error), Int(errSecParam), "a ciphertext that does not decrypt")

        let ec = try storedKey(Data(unique().utf8), [kSecAttrIsExtractable as String: false])
        let ecies = SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM
        let sealed = try XCTUnwrap(SecKeyCreateEncryptedData(SecKeyCopyPublicKey(ec)!, ecies, plain as CFData, &error))
        XCTAssertEqual(SecKeyCreateDecryptedData(ec, ecies, sealed, &error) as Data?, plain)

        let peer = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom] as CFDictionary, &error))
        let params = [kSecKeyKeyExchangeParameterRequestedSize: 32, kSecKeyKeyExchangeParameterSharedInfo: Data("info".utf8)] as CFDictionary
        let ours = SecKeyCopyKeyExchangeResult(ec, .ecdhKeyExchangeStandardX963SHA256, SecKeyCopyPublicKey(peer)!, params, &error) as Data?
        let theirs = SecKeyCopyKeyExchangeResult(peer, .ecdhKeyExchangeStandardX963SHA256, SecKeyCopyPublicKey(ec)!, params, &error) as Data?
        XCTAssertEqual(ours?.count, 32)
        XCTAssertEqual(ours, theirs, "both sides derive the same bytes")
        XCTAssertNil(SecKeyCopyKeyExchangeResult(ec, .ecdhKeyExchangeStandardX963SHA256, SecKeyCopyPublicKey(peer)!,
                                                 [:] as CFDictionary, &error), "the KDF variant needs a size")
        XCTAssertEqual(errorCode(error), Int(errSecParam))
        XCTAssertNil(SecKeyCreateSignature(ec, .rsaSignatureMessagePKCS1v15SHA256, plain as CFData, &error))
        XCTAssertEqual(errorCode(error), Int(errSecUnimplemented), "an algorithm of the other key kind")
    }

    func testEachUseIsAuditedAndADeletedKeyNoLongerSigns() throws {
        let tag = Data(unique().utf8)
        let key = try storedKey(tag, [kSecAttrIsExtractable as String: false])
        let ref = try XCTUnwrap(copyMatching(keyQuery(tag).merging([kSecReturnPersistentRef as String: true]) { $1 }).result as? Data)
        let refHex = ref.map { String(format: "%02x", $0) }.joined()
        for _ in 0..<3 { XCTAssertNotNil(sign(key, Data("audited".utf8)).0) }
        let audit = try h.run(["audit"])
        XCTAssertEqual(audit.status, 0, "\(audit)")
        let ours = audit.stdout.split(separator: "\n")
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
            .filter { $0.count >= 8 && $0[3] == String(getpid()) && $0[5].hasPrefix(refHex) && $0[4] != "add" }
        XCTAssertEqual(ours.first?[4], "sign", "the first use has a line naming the key:\n\(audit.stdout)")
        XCTAssertFalse(ours.contains { $0[4].hasPrefix("read") }, "a use is not a read of the key")
        let file = try String(contentsOfFile: h.vault + ".audit", encoding: .utf8)
        XCTAssertFalse(file.contains("signed"), "no input in the log")

        assertStatus(SecItemDelete(keyQuery(tag) as CFDictionary), errSecSuccess)
        XCTAssertEqual(sign(key, Data("gone".utf8)).1, Int(errSecItemNotFound), "the SecKey names the item, not a copy")
    }

    func testLockedKeychainRefusesToSign() throws {
        let key = try storedKey(Data(unique().utf8), [kSecAttrIsExtractable as String: false])
        XCTAssertNotNil(sign(key, Data("before".utf8)).0)
        let lock = try h.run(["lock-keychain"])
        XCTAssertEqual(lock.status, 0, "\(lock)")
        let (signature, code) = sign(key, Data("while locked".utf8))
        let unlock = try h.run(["unlock-keychain"], input: "pass phrase 1\n")
        XCTAssertEqual(unlock.status, 0, "\(unlock)")
        XCTAssertNil(signature)
        XCTAssertEqual(code, Int(errSecInteractionNotAllowed))
        XCTAssertNotNil(SecKeyCopyPublicKey(key), "the public half needs no unlocked vault")
        XCTAssertNotNil(sign(key, Data("after".utf8)).0)
    }

    /// A local user outside the key's access group who knows its persistent reference asks the
    /// daemon to sign with it (attacker program Attackers/use_key.py): the key is not found.
    func testOtherUserOutsideTheGroupCannotSign() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root: a test user and setpriv") }
        guard access("/usr/bin/python3", X_OK) == 0 else { throw XCTSkip("needs /usr/bin/python3") }
        let tag = Data(unique().utf8)
        let key = try storedKey(tag, [kSecAttrIsExtractable as String: false])
        let ref = try XCTUnwrap(copyMatching(keyQuery(tag).merging([kSecReturnPersistentRef as String: true]) { $1 }).result as? Data)
        let outsider = try accounts.makeUser()
        chmod(h.runtimeDir, 0o755)  // the outsider may reach the socket; the daemon decides
        let socket = try XCTUnwrap(ProcessInfo.processInfo.environment["KEYCHAINFS_SOCKET"])
        let attacker = try Attackers.start("use_key.py", [socket, ref.map { String(format: "%02x", $0) }.joined()],
                                           as: outsider, scratch: dir.path)
        defer { attacker.stop() }
        XCTAssertEqual(attacker.line(within: 20), "status \(errSecItemNotFound)")
        XCTAssertNotNil(sign(key, Data("still the owner's".utf8)).0)
    }
}
