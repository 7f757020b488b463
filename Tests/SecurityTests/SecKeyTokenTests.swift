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

    override class func setUp() {
        // The daemon the base class starts inherits KEYCHAINFS_TCTI from the harness's environment.
        tpm = try? SoftwareTPM()
        if let tpm { setenv("KEYCHAINFS_TCTI", tpm.tcti, 1) }
        super.setUp()
    }

    override class func tearDown() {
        super.tearDown()
        unsetenv("KEYCHAINFS_TCTI")
        tpm?.stop()
        tpm = nil
    }

    override func setUpWithError() throws {
        guard Self.tpm != nil else { throw XCTSkip("swtpm is not installed (scripts/setup.sh)") }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("kcfs-token-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    func secureEnclaveKey(_ tag: Data, permanent: Bool = true) -> (SecKey?, Int?) {
        var error: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                                     kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                                     kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: permanent,
                                                                     kSecAttrApplicationTag as String: tag]]
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
