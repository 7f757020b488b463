import Foundation
import KeychainTestSupport
import Security
import XCTest

/// `kSecAttrTokenIDSecureEnclave` keys made inside a TPM (a software TPM here) by the daemon:
/// only the TPM-wrapped key is in the vault, signatures come from the TPM and verify with
/// openssl, and the private key has no external representation, as on Apple's Secure Enclave.
final class SecKeyTokenTests: SecItemConformanceCase {
    nonisolated(unsafe) static var tpm: SoftwareTPM?
    var dir: URL!
    let accounts = TestAccounts()

    override class func setUp() {
        // The daemon the base class starts inherits KEYCHAINFS_TCTI from the harness's environment.
        tpm = SoftwareTPM.forHarness()
        super.setUp()
    }

    override class func tearDown() {
        super.tearDown()
        tpm?.stopForHarness()
        tpm = nil
    }

    override func setUpWithError() throws {
        guard Self.tpm != nil else { throw XCTSkip("swtpm is not installed (scripts/setup.sh)") }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("kcfs-token-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        accounts.remove()
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    func secureEnclaveKey(_ tag: Data, permanent: Bool = true, control: SecAccessControl? = nil) -> (SecKey?, Int?) {
        var error: Unmanaged<CFError>?
        var privateAttrs: [String: Any] = [kSecAttrIsPermanent as String: permanent, kSecAttrApplicationTag as String: tag]
        if let control { privateAttrs[kSecAttrAccessControl as String] = control }
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                                     kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                                     kSecPrivateKeyAttrs as String: privateAttrs]
        let key = SecKeyCreateRandomKey(params as CFDictionary, &error)
        return (key, error.map { CFErrorGetCode($0.takeRetainedValue()) })
    }

    func testASecureEnclaveKeySignsInTheTPMAndOpenSSLVerifies() throws {
        let tag = Data(unique().utf8)
        let (made, code) = secureEnclaveKey(tag)
        XCTAssertNil(code)
        let key = try XCTUnwrap(made)
        let message = Data("signed inside the TPM".utf8)
        var error: Unmanaged<CFError>?
        let signature = try XCTUnwrap(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data?,
                                      "\(String(describing: error?.takeRetainedValue()))")
        // A figure for docs/tpm.md, not an assertion: each signature loads the key into the TPM.
        let start = Date()
        for _ in 0..<20 { _ = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, nil) }
        print("SecKeyTokenTests: \(Int(Date().timeIntervalSince(start) * 1000 / 20)) ms per signature in the software TPM")
        let pub = try XCTUnwrap(SecKeyCopyPublicKey(key))
        let point = try XCTUnwrap(SecKeyCopyExternalRepresentation(pub, &error) as Data?)
        XCTAssertEqual(point.count, 65)
        XCTAssertTrue(SecKeyVerifySignature(pub, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error))

        let spki = Data([0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
                         0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00]) + point
        let (pubFile, msgFile, sigFile) = (dir.appendingPathComponent("pub.der"), dir.appendingPathComponent("msg"),
                                           dir.appendingPathComponent("sig"))
        try spki.write(to: pubFile)
        try message.write(to: msgFile)
        try signature.write(to: sigFile)
        XCTAssertEqual(try openssl(["dgst", "-sha256", "-verify", pubFile.path, "-keyform", "DER", "-signature", sigFile.path, msgFile.path]), 0)
        try Data("another message".utf8).write(to: msgFile)
        XCTAssertNotEqual(try openssl(["dgst", "-sha256", "-verify", pubFile.path, "-keyform", "DER", "-signature", sigFile.path, msgFile.path]), 0)
    }

    func testKeyAgreementInTheTPMMatchesTheSoftwareSide() throws {
        let token = try XCTUnwrap(secureEnclaveKey(Data(unique().utf8)).0)
        var error: Unmanaged<CFError>?
        let software = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                                            kSecAttrKeySizeInBits as String: 256] as CFDictionary, &error))
        let tokenPublic = try XCTUnwrap(SecKeyCopyPublicKey(token)), softwarePublic = try XCTUnwrap(SecKeyCopyPublicKey(software))
        for (algorithm, params) in [(SecKeyAlgorithm.ecdhKeyExchangeStandard, [String: Any]()),
                                    (.ecdhKeyExchangeStandardX963SHA256,
                                     [kSecKeyKeyExchangeParameterRequestedSize as String: 48,
                                      kSecKeyKeyExchangeParameterSharedInfo as String: Data("info".utf8)])] {
            let inTPM = SecKeyCopyKeyExchangeResult(token, algorithm, softwarePublic, params as CFDictionary, &error) as Data?
            XCTAssertNotNil(inTPM, "\(algorithm.rawValue): \(String(describing: error?.takeRetainedValue()))")
            let here = SecKeyCopyKeyExchangeResult(software, algorithm, tokenPublic, params as CFDictionary, &error) as Data?
            XCTAssertEqual(inTPM, here, "\(algorithm.rawValue)")
            XCTAssertEqual(inTPM?.count, params.isEmpty ? 32 : 48)
        }
    }

    func testThePrivateKeyHasNoExternalRepresentationAndTheItemSaysItsToken() throws {
        let tag = Data(unique().utf8)
        let key = try XCTUnwrap(secureEnclaveKey(tag).0)
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCopyExternalRepresentation(key, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecDataNotAvailable))
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]
        XCTAssertEqual(dataOf(query).status, errSecDataNotAvailable, "the wrapped key is never returned")
        let attrs = try XCTUnwrap(attributesOf(query))
        XCTAssertEqual(attrs[kSecAttrTokenID as String] as? String, kSecAttrTokenIDSecureEnclave as String)
        XCTAssertEqual(attrs[kSecAttrKeySizeInBits as String] as? Int, 256)
        XCTAssertEqual(attrs[kSecAttrAccessible as String] as? String, kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String,
                       "a key that opens only in this TPM is bound to this device")
        var migratable: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                     kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                                     kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true,
                                                                     kSecAttrApplicationTag as String: Data(unique().utf8),
                                                                     kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked]]
        XCTAssertNil(SecKeyCreateRandomKey(params as CFDictionary, &migratable))
        XCTAssertEqual(migratable.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecParam))
        // Its bytes, its token and its class stay: an update changing them is refused.
        for change: [String: Any] in [[kSecValueData as String: Data(repeating: 1, count: 97)],
                                      [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock],
                                      [kSecAttrSynchronizable as String: true]] {
            XCTAssertEqual(SecItemUpdate(query as CFDictionary, change as CFDictionary), errSecParam, "\(change)")
        }
        XCTAssertEqual(SecItemUpdate(query as CFDictionary, [kSecAttrLabel as String: "relabelled"] as CFDictionary), errSecSuccess)
        var signError: Unmanaged<CFError>?
        XCTAssertNotNil(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data("still signs".utf8) as CFData, &signError),
                        "\(String(describing: signError?.takeRetainedValue()))")
        // Key bytes of its own: the key is made in the TPM, never imported.
        let add: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                                  kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                                  kSecAttrApplicationTag as String: Data(unique().utf8), kSecValueData as String: Data(repeating: 7, count: 97)]
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecParam)
        // Not permanent: there is nowhere else for it to live.
        XCTAssertEqual(secureEnclaveKey(Data(unique().utf8), permanent: false).1, Int(errSecUnimplemented))
    }

    /// The wrapped key is never returned, and no update makes it returnable: not `extr` true,
    /// not another key class (a public key's bytes are returned), type or size. Whoever holds the
    /// blob and can reach the TPM would sign with it outside the daemon, past its access groups,
    /// its lock and the approval program.
    func testNoUpdateMakesTheWrappedKeyReadable() throws {
        let tag = Data(unique().utf8)
        let key = try XCTUnwrap(secureEnclaveKey(tag).0)
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]
        for change: [String: Any] in [[kSecAttrIsExtractable as String: true],
                                      [kSecAttrKeyClass as String: kSecAttrKeyClassPublic],
                                      [kSecAttrKeyType as String: kSecAttrKeyTypeRSA],
                                      [kSecAttrKeySizeInBits as String: 384]] {
            XCTAssertEqual(SecItemUpdate(query as CFDictionary, change as CFDictionary), errSecParam, "\(change)")
            XCTAssertNil(dataOf(query).data, "after \(change): the wrapped key is never returned")
        }
        let attrs = try XCTUnwrap(attributesOf(query))
        XCTAssertEqual(attrs[kSecAttrIsExtractable as String] as? Bool, false)
        XCTAssertEqual(attrs[kSecAttrKeyClass as String].map { "\($0)" }, "\(kSecAttrKeyClassPrivate)")
        var signError: Unmanaged<CFError>?
        XCTAssertNotNil(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data("still signs".utf8) as CFData, &signError),
                        "\(String(describing: signError?.takeRetainedValue()))")
    }

    /// The private scalar never leaves the TPM, so the test cannot know it: it looks for any
    /// 32-byte value d with d·G equal to the key's public point (ScalarSearch, docs/testing.md)
    /// in the daemon's writable memory after the key was made and used, and in the vault file.
    func testThePrivateScalarIsInNeitherTheDaemonsMemoryNorTheVaultFile() throws {
        guard geteuid() == 0 else { throw XCTSkip("reading the daemon's memory needs root") }
        let key = try XCTUnwrap(secureEnclaveKey(Data(unique().utf8)).0)
        var error: Unmanaged<CFError>?
        for i in 0..<3 {
            XCTAssertNotNil(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data("message \(i)".utf8) as CFData, &error))
        }
        let pub = try XCTUnwrap(SecKeyCopyPublicKey(key))
        let point = try XCTUnwrap(SecKeyCopyExternalRepresentation(pub, &error) as Data?)
        let peer = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                                        kSecAttrKeySizeInBits as String: 256] as CFDictionary, &error))
        XCTAssertNotNil(SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeStandard, try XCTUnwrap(SecKeyCopyPublicKey(peer)),
                                                    [:] as CFDictionary, &error))

        // The search itself finds a known scalar hidden in random bytes, in either byte order.
        let known = try XCTUnwrap(SecKeyCopyExternalRepresentation(peer, &error) as Data?)  // 04 || X || Y || D
        let d = Array(known.suffix(32))
        var planted = Set<[UInt8]>()
        ScalarSearch.candidates(Canary.bytes(3000) + d + Canary.bytes(3000) + d.reversed() + Canary.bytes(100), into: &planted)
        let found = try ScalarSearch.matches(planted, publicPoint: Array(known.prefix(65)), scratch: dir.path)
        XCTAssertEqual(Set(found), [d, d.reversed()].reduce(into: Set<String>()) { $0.insert($1.map { String(format: "%02x", $0) }.joined()) },
                       "the control scalar is found")

        let pid = try XCTUnwrap(try h.daemonPID())
        let files = [h.vault, h.vault + "-wal"]
        let start = Date()
        let result = try ScalarSearch.search(pid: pid, files: files, publicPoint: Array(point), scratch: dir.path)
        print("SecKeyTokenTests: scalar search of daemon \(pid) and the vault: \(result.bytes / 1024) KiB, "
              + "\(result.candidates) candidate windows, \(Int(Date().timeIntervalSince(start))) s")
        XCTAssertGreaterThan(result.candidates, 0, "the daemon's memory was read")
        XCTAssertEqual(result.matches, [], "the Secure Enclave key's private scalar is in the daemon's memory or the vault")
    }

    // MARK: Access control: privateKeyUsage and presence

    var approval: ScriptedApprovalProgram!
    var program: String { approval.path }
    var calls: String { approval.calls }

    /// An approval program that answers from a file and notes each call, set on the vault.
    func useApprovalProgram() throws {
        approval = try ScriptedApprovalProgram(in: dir.path)
        let r = try h.run(["set-keychain-settings", "--approval-program", program, "--approval-timeout", "10"])
        XCTAssertEqual(r.status, 0, "set-keychain-settings: \(r)")
        addTeardownBlock { [h] in _ = try? h.run(["set-keychain-settings", "--approval-program", ""]) }
    }

    func say(_ text: String) throws { try approval.say(text) }
    var callLines: [String] { approval.callLines }

    func control(_ flags: SecAccessControlCreateFlags, _ protection: CFString = kSecAttrAccessibleWhenUnlockedThisDeviceOnly) throws -> SecAccessControl {
        try XCTUnwrap(SecAccessControlCreateWithFlags(kCFAllocatorDefault, protection, flags, nil))
    }

    /// The OSStatus of a signature (0 when it signed).
    func signStatus(_ key: SecKey) -> Int {
        var error: Unmanaged<CFError>?
        let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data("gated".utf8) as CFData, &error)
        if signature != nil { return 0 }
        return error.map { CFErrorGetCode($0.takeRetainedValue()) } ?? -1
    }

    func testPresenceGatesEachSignatureAndKeyAgreementThroughTheApprovalProgram() throws {
        try useApprovalProgram()
        let tag = Data(unique().utf8)
        let key = try XCTUnwrap(secureEnclaveKey(tag, control: try control([.privateKeyUsage, .userPresence])).0)
        XCTAssertEqual(callLines.count, 0, "making the key asks nobody")
        let ref = try XCTUnwrap(copyMatching([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                                              kSecReturnPersistentRef as String: true]).result as? Data)
        try say("yes")
        XCTAssertEqual(signStatus(key), 0)
        XCTAssertEqual(signStatus(key), 0)
        XCTAssertEqual(callLines.count, 2, "each use asks: \(callLines)")
        XCTAssertTrue(callLines.allSatisfy { $0.hasPrefix("--reason presence --label ") }, "\(callLines)")

        try say("no")
        XCTAssertEqual(signStatus(key), Int(errSecUserCanceled))
        var error: Unmanaged<CFError>?
        let peer = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                                        kSecAttrKeySizeInBits as String: 256] as CFDictionary, &error))
        XCTAssertNil(SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeStandard, try XCTUnwrap(SecKeyCopyPublicKey(peer)),
                                                 [:] as CFDictionary, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecUserCanceled))
        XCTAssertEqual(callLines.count, 4, "\(callLines)")

        // Without a program nobody can approve: errSecInteractionNotAllowed, never a signature.
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", ""]).status, 0)
        XCTAssertEqual(signStatus(key), Int(errSecInteractionNotAllowed))
        XCTAssertEqual(callLines.count, 4)

        let audit = try h.run(["audit", "--item", ref.map { String(format: "%02x", $0) }.joined(),
                               "--event", "presence-approved,presence-denied"]).stdout
        let lines = audit.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.contains("\tpresence-approved\t") }.count, 2, audit)
        XCTAssertEqual(lines.filter { $0.contains("\tpresence-denied\t") }.count, 2, audit)
    }

    /// Attackers/use_key.py run by `user` (nil: this process's own user) against the daemon's
    /// socket: the status it printed.
    func handMadeUse(_ ref: Data, _ use: String, as user: TestUser?) throws -> String? {
        let socket = try XCTUnwrap(ProcessInfo.processInfo.environment["KEYCHAINFS_SOCKET"])
        let args = [socket, ref.map { String(format: "%02x", $0) }.joined(), use]
        if let user {
            let attacker = try Attackers.start("use_key.py", args, as: user, scratch: dir.path)
            defer { attacker.stop() }
            return attacker.line(within: 20)
        }
        let r = try Spawn.run(["/usr/bin/python3", "-u", "-B", Attackers.directory + "/use_key.py"] + args,
                              environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], input: Data(), timeout: 30)
        return String(decoding: r.out, as: UTF8.self).split(separator: "\n").first.map(String.init)
    }

    /// useKey requests made by hand over the socket, without the client library: the owner's
    /// signature and key agreement with a presence-gated key still ask the approval program
    /// (denied: errSecUserCanceled), and a local user outside the key's access group who knows
    /// its persistent reference finds no key, for either use.
    func testHandMadeUseKeyRequestsAreGatedAndStayInTheKeysGroup() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root: a test user and setpriv") }
        guard access("/usr/bin/python3", X_OK) == 0 else { throw XCTSkip("needs /usr/bin/python3") }
        try useApprovalProgram()
        let tag = Data(unique().utf8)
        let key = try XCTUnwrap(secureEnclaveKey(tag, control: try control([.privateKeyUsage, .userPresence])).0)
        let ref = try XCTUnwrap(copyMatching([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                                              kSecReturnPersistentRef as String: true]).result as? Data)
        try say("no")
        for use in ["sign", "keyExchange"] {
            XCTAssertEqual(try handMadeUse(ref, use, as: nil), "status \(errSecUserCanceled)", use)
        }
        XCTAssertEqual(callLines.count, 2, "each hand-made use asked: \(callLines)")
        try say("yes")
        XCTAssertEqual(try handMadeUse(ref, "keyExchange", as: nil), "status 0", "approved, the TPM agrees")
        XCTAssertEqual(callLines.count, 3)

        let outsider = try accounts.makeUser()
        chmod(h.runtimeDir, 0o755)  // the outsider may reach the socket; the daemon decides
        for use in ["sign", "keyExchange"] {
            XCTAssertEqual(try handMadeUse(ref, use, as: outsider), "status \(errSecItemNotFound)", use)
        }
        XCTAssertEqual(callLines.count, 3, "nobody was asked for the outsider")
        XCTAssertEqual(signStatus(key), 0)
    }

    /// Taking presence off a gated key by an update is itself gated: refused without an
    /// approval (the update reads the item as a use does), and the key still asks each time.
    func testAnUpdateCannotTakePresenceOffAGatedKey() throws {
        try useApprovalProgram()
        let tag = Data(unique().utf8)
        let key = try XCTUnwrap(secureEnclaveKey(tag, control: try control([.privateKeyUsage, .userPresence])).0)
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]
        try say("no")
        let status = SecItemUpdate(query as CFDictionary, [kSecAttrAccessControl as String: try control([.privateKeyUsage])] as CFDictionary)
        XCTAssertNotEqual(status, errSecSuccess)
        XCTAssertEqual(signStatus(key), Int(errSecUserCanceled), "still gated")
    }

    /// biometryAny and biometryCurrentSet are presence (the program is asked, `--reason
    /// presence`); devicePasscode alone asks for the vault passphrase.
    func testBiometryIsPresenceAndDevicePasscodeIsTheVaultPassphrase() throws {
        try useApprovalProgram()
        for flags: SecAccessControlCreateFlags in [.biometryAny, .biometryCurrentSet] {
            let key = try XCTUnwrap(secureEnclaveKey(Data(unique().utf8), control: try control([.privateKeyUsage, flags])).0)
            try say("yes")
            XCTAssertEqual(signStatus(key), 0, "\(flags)")
            try say("no")
            XCTAssertEqual(signStatus(key), Int(errSecUserCanceled), "\(flags)")
        }
        XCTAssertTrue(callLines.allSatisfy { $0.hasPrefix("--reason presence ") }, "\(callLines)")
        let pin = try XCTUnwrap(secureEnclaveKey(Data(unique().utf8), control: try control([.privateKeyUsage, .devicePasscode])).0)
        try say("passphrase")
        XCTAssertEqual(signStatus(pin), 0)
        XCTAssertEqual(callLines.last?.hasPrefix("--reason passphrase "), true, "\(callLines)")
        try say("yes")  // exits 0 without printing the passphrase
        XCTAssertEqual(signStatus(pin), Int(errSecAuthFailed))
    }

    /// The access control must let the TPM use the key (privateKeyUsage) and keep it on this
    /// device; an access control without presence flags asks nobody.
    func testAccessControlNeedsPrivateKeyUsageAndAThisDeviceOnlyClass() throws {
        try useApprovalProgram()
        XCTAssertEqual(secureEnclaveKey(Data(unique().utf8), control: try control([.userPresence])).1, Int(errSecParam))
        XCTAssertEqual(secureEnclaveKey(Data(unique().utf8), control: try control([.privateKeyUsage], kSecAttrAccessibleWhenUnlocked)).1,
                       Int(errSecParam))
        let tag = Data(unique().utf8)
        let key = try XCTUnwrap(secureEnclaveKey(tag, control: try control([.privateKeyUsage])).0)
        XCTAssertEqual(signStatus(key), 0)
        XCTAssertEqual(callLines.count, 0, "no presence flag: nobody is asked")
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]
        XCTAssertEqual(attributesOf(query)?[kSecAttrAccessible as String] as? String, kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String)
        XCTAssertEqual(SecItemUpdate(query as CFDictionary, [kSecAttrAccessControl as String: try control([.privateKeyUsage],
                                                                                                          kSecAttrAccessibleAfterFirstUnlock)] as CFDictionary),
                       errSecParam, "an update may not give it a class that leaves the machine")
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
}

/// The daemon's TPM gone (a TCTI where nothing listens): errSecNotAvailable, and no key is stored.
final class SecKeyTokenWithoutTPMTests: SecItemConformanceCase {
    override class func setUp() {
        if let tpm = try? SoftwareTPM() {
            tpm.stop()
            setenv("KEYCHAINFS_TCTI", tpm.tcti, 1)
        }
        super.setUp()
    }

    override class func tearDown() {
        super.tearDown()
        unsetenv("KEYCHAINFS_TCTI")
    }

    func testKeyCreationIsNotAvailableAndStoresNothing() throws {
        let tag = Data(unique().utf8)
        var error: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                     kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                                     kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true,
                                                                     kSecAttrApplicationTag as String: tag]]
        XCTAssertNil(SecKeyCreateRandomKey(params as CFDictionary, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecNotAvailable))
        XCTAssertEqual(count([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]), 0)
    }
}

/// The vault and its device key copied to another machine, whose daemon has another TPM: the
/// Secure Enclave key's item comes along, but its TPM-wrapped blob loads in no other TPM, so
/// every use fails with errSecDecode and nothing is signed in software. Back on its own
/// machine the same blob signs again.
final class SecKeyTokenOtherTPMTests: SecItemConformanceCase {
    nonisolated(unsafe) static var tpm: SoftwareTPM?

    override class func setUp() {
        tpm = SoftwareTPM.forHarness()
        super.setUp()
    }

    override class func tearDown() {
        super.tearDown()
        tpm?.stopForHarness()
        tpm = nil
    }

    func signature(_ key: SecKey) -> (Data?, Int?) {
        var error: Unmanaged<CFError>?
        let s = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data("which machine?".utf8) as CFData, &error) as Data?
        return (s, error.map { CFErrorGetCode($0.takeRetainedValue()) })
    }

    func testAnotherTPMCannotUseTheStoredBlobAndNothingSignsInSoftware() throws {
        guard Self.tpm != nil else { throw XCTSkip("swtpm is not installed (scripts/setup.sh)") }
        let tag = Data(unique().utf8)
        var error: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                                     kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                                     kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true,
                                                                     kSecAttrApplicationTag as String: tag]]
        let key = try XCTUnwrap(SecKeyCreateRandomKey(params as CFDictionary, &error))
        XCTAssertNotNil(signature(key).0, "it signs at home")
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]

        // Another machine: its own TPM; the vault (stopped for a consistent copy) and the device key copied.
        let tpmB = try SoftwareTPM()
        addTeardownBlock { tpmB.stop() }
        let b = try CLIHarness()
        b.environment["KEYCHAINFS_TCTI"] = tpmB.tcti
        addTeardownBlock { b.tearDown() }
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let fm = FileManager.default
        for name in try fm.contentsOfDirectory(atPath: h.dir) where name.hasPrefix("test.vault") && !name.hasSuffix(".audit") {
            try fm.copyItem(atPath: h.dir + "/" + name, toPath: b.dir + "/" + name)
        }
        try fm.copyItem(atPath: h.dir + "/device.key", toPath: b.dir + "/device.key")
        let unlock = try b.run(["unlock-keychain"], input: "pass phrase 1\n")
        XCTAssertEqual(unlock.status, 0, "\(unlock)")

        let home = ProcessInfo.processInfo.environment["KEYCHAINFS_SOCKET"]
        setenv("KEYCHAINFS_SOCKET", Self.socketPath(b), 1)
        defer { if let home { setenv("KEYCHAINFS_SOCKET", home, 1) } else { unsetenv("KEYCHAINFS_SOCKET") } }
        // The item is there (the same reference), its ThisDeviceOnly class opens with the copied key...
        XCTAssertEqual(attributesOf(query)?[kSecAttrTokenID as String] as? String, kSecAttrTokenIDSecureEnclave as String)
        // ...but this TPM cannot load the blob: no signature, no key agreement.
        let (made, code) = signature(key)
        XCTAssertNil(made)
        XCTAssertEqual(code, Int(errSecDecode))
        let peer = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                                        kSecAttrKeySizeInBits as String: 256] as CFDictionary, &error))
        XCTAssertNil(SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeStandard, try XCTUnwrap(SecKeyCopyPublicKey(peer)),
                                                 [:] as CFDictionary, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecDecode))
        let logs = ((try? fm.contentsOfDirectory(atPath: b.runtimeDir)) ?? []).filter { $0.hasSuffix(".log") }
            .compactMap { try? String(contentsOfFile: b.runtimeDir + "/" + $0, encoding: .utf8) }.joined()
        XCTAssertTrue(logs.contains("token key: the key was made by another TPM"), logs)
        XCTAssertEqual(try b.run(["stop"]).status, 0)

        // Home again: the same blob, its own TPM.
        if let home { setenv("KEYCHAINFS_SOCKET", home, 1) }
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertNotNil(signature(key).0, "it signs at home again")
    }
}
