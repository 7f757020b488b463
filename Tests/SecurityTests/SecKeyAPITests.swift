import Foundation
import KeychainTestSupport
import Security
import XCTest

/// `SecKey` without the keychain: generation, Apple's encodings and attributes, signatures,
/// encryption, key exchange, and interoperation with the `openssl` command.
final class SecKeyAPITests: XCTestCase {
    var dir: URL!

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("kcfs-seckey-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: dir)
    }

    func make(_ type: CFString, _ bits: Int, _ extra: [String: Any] = [:]) throws -> SecKey {
        var params: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: bits]
        for (k, v) in extra { params[k] = v }
        var error: Unmanaged<CFError>?
        guard let key = SecKeyCreateRandomKey(params as CFDictionary, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        return key
    }

    func external(_ key: SecKey) -> Data {
        var error: Unmanaged<CFError>?
        return SecKeyCopyExternalRepresentation(key, &error)! as Data
    }

    func code(_ error: Unmanaged<CFError>?) -> Int? { error.map { CFErrorGetCode($0.takeRetainedValue()) } }

    func sha1(_ data: Data) throws -> Data {
        let file = dir.appendingPathComponent("sha1-input")
        try data.write(to: file)
        let out = try run("/usr/bin/openssl", ["dgst", "-sha1", "-binary", file.path])
        return out
    }

    @discardableResult
    func run(_ tool: String, _ args: [String], status: Int32 = 0) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, status, "\(tool) \(args.joined(separator: " "))")
        return data
    }

    // MARK: Keys and their representations

    func testGeneratedKeysHaveApplesRepresentationsAndAttributes() throws {
        for (type, bits, publicLength) in [(kSecAttrKeyTypeECSECPrimeRandom, 256, 65), (kSecAttrKeyTypeEC, 384, 97),
                                           (kSecAttrKeyTypeECSECPrimeRandom, 521, 133), (kSecAttrKeyTypeRSA, 2048, 270)] {
            let key = try make(type, bits)
            let pub = try XCTUnwrap(SecKeyCopyPublicKey(key))
            let pubBytes = external(pub)
            XCTAssertEqual(pubBytes.count, publicLength, "\(bits)")
            let attrs = try XCTUnwrap(SecKeyCopyAttributes(key) as? [String: Any])
            XCTAssertEqual(attrs[kSecAttrKeyClass as String] as? String, kSecAttrKeyClassPrivate as String)
            XCTAssertEqual(attrs[kSecAttrKeyType as String] as? String, type as String)
            XCTAssertEqual(attrs[kSecAttrKeySizeInBits as String] as? Int, bits)
            XCTAssertEqual(attrs[kSecAttrApplicationLabel as String] as? Data, try sha1(pubBytes), "klbl is SHA-1 of the public key")
            XCTAssertEqual(attrs[kSecValueData as String] as? Data, external(key))
            XCTAssertEqual((SecKeyCopyAttributes(pub) as? [String: Any])?[kSecAttrKeyClass as String] as? String, "0")
            // The external representation reads back as the same key.
            var error: Unmanaged<CFError>?
            let back = SecKeyCreateWithData(external(key) as CFData, [kSecAttrKeyType: type,
                                                                      kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, &error)
            XCTAssertEqual(back, key)
            XCTAssertEqual(SecKeyCreateWithData(pubBytes as CFData, [kSecAttrKeyType: type, kSecAttrKeyClass: kSecAttrKeyClassPublic] as CFDictionary, &error), pub)
        }
        let p256 = try make(kSecAttrKeyTypeECSECPrimeRandom, 256)
        XCTAssertEqual(external(p256).count, 97, "04 || X || Y || K")
        XCTAssertEqual(external(p256).first, 4)
    }

    func testBadParametersGiveApplesErrors() throws {
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 200] as CFDictionary, &error))
        XCTAssertEqual(code(error), Int(errSecParam))
        XCTAssertNil(SecKeyCreateRandomKey([kSecAttrKeyType: "99"] as CFDictionary, &error))
        XCTAssertEqual(code(error), Int(errSecParam))
        XCTAssertNil(SecKeyCreateWithData(Data([4, 1, 2]) as CFData, [kSecAttrKeyType: kSecAttrKeyTypeEC,
                                                                    kSecAttrKeyClass: kSecAttrKeyClassPublic] as CFDictionary, &error))
        XCTAssertEqual(code(error), Int(errSecParam))
        XCTAssertNil(SecKeyCreateWithData(Data(count: 65) as CFData, [kSecAttrKeyType: kSecAttrKeyTypeEC] as CFDictionary, &error))
        XCTAssertEqual(code(error), Int(errSecParam), "kSecAttrKeyClass is required")
        let domain = try XCTUnwrap({ () -> String? in
            _ = SecKeyCreateRandomKey([kSecAttrKeyType: "99"] as CFDictionary, &error)
            return error.map { CFErrorGetDomain($0.takeRetainedValue()) as String }
        }())
        XCTAssertEqual(domain, "NSOSStatusErrorDomain")
    }

    // MARK: Signatures

    func testSignaturesVerifyAndFailAsOnApple() throws {
        let ec = try make(kSecAttrKeyTypeECSECPrimeRandom, 384)
        let rsa = try make(kSecAttrKeyTypeRSA, 2048)
        let message = Data("the message".utf8)
        let cases: [(SecKey, [SecKeyAlgorithm])] = [
            (ec, [.ecdsaSignatureMessageX962SHA1, .ecdsaSignatureMessageX962SHA256, .ecdsaSignatureMessageX962SHA384,
                  .ecdsaSignatureMessageX962SHA512]),
            (rsa, [.rsaSignatureMessagePKCS1v15SHA256, .rsaSignatureMessagePKCS1v15SHA512, .rsaSignatureMessagePSSSHA256,
                   .rsaSignatureMessagePSSSHA384, .rsaSignatureMessagePSSSHA1]),
        ]
        for (key, algorithms) in cases {
            let pub = SecKeyCopyPublicKey(key)!
            for algorithm in algorithms {
                var error: Unmanaged<CFError>?
                XCTAssertTrue(SecKeyIsAlgorithmSupported(key, .sign, algorithm))
                XCTAssertFalse(SecKeyIsAlgorithmSupported(pub, .sign, algorithm))
                let sig = try XCTUnwrap(SecKeyCreateSignature(key, algorithm, message as CFData, &error), "\(algorithm.rawValue)")
                XCTAssertTrue(SecKeyVerifySignature(pub, algorithm, message as CFData, sig, &error))
                XCTAssertTrue(SecKeyVerifySignature(key, algorithm, message as CFData, sig, &error), "a private key verifies too")
                XCTAssertFalse(SecKeyVerifySignature(pub, algorithm, Data("other".utf8) as CFData, sig, &error))
                XCTAssertEqual(code(error), Int(errSecVerifyFailed))
                XCTAssertNil(SecKeyCreateSignature(pub, algorithm, message as CFData, &error))
                XCTAssertEqual(code(error), Int(errSecUnimplemented), "a public key does not sign")
            }
        }
        // Digest algorithms take a digest of the named length.
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCreateSignature(ec, .ecdsaSignatureDigestX962SHA256, Data(count: 31) as CFData, &error))
        XCTAssertEqual(code(error), Int(errSecParam))
        let digestSig = try XCTUnwrap(SecKeyCreateSignature(ec, .ecdsaSignatureDigestX962SHA256, Data(count: 32) as CFData, &error))
        XCTAssertTrue(SecKeyVerifySignature(ec, .ecdsaSignatureDigestX962, Data(count: 32) as CFData, digestSig, &error))
        XCTAssertNil(SecKeyCreateSignature(rsa, .ecdsaSignatureMessageX962SHA256, message as CFData, &error))
        XCTAssertEqual(code(error), Int(errSecUnimplemented), "an RSA key does not do ECDSA")
        XCTAssertFalse(SecKeyIsAlgorithmSupported(ec, .sign, .rsaSignatureRaw), "raw RSA is for RSA keys")
    }

    /// SPKI DER for a P-256 point: the fixed AlgorithmIdentifier (id-ecPublicKey, prime256v1).
    func spkiP256(_ point: Data) -> Data {
        Data([0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
              0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00]) + point
    }

    func testSignaturesInteroperateWithOpenSSL() throws {
        let openssl = "/usr/bin/openssl"
        let message = dir.appendingPathComponent("message")
        try Data("signed by one, verified by the other".utf8).write(to: message)
        let sigFile = dir.appendingPathComponent("sig")
        var error: Unmanaged<CFError>?

        // Ours, verified by openssl: ECDSA P-256 and RSA PKCS1v15 and PSS.
        let ec = try make(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let ecPub = dir.appendingPathComponent("ec.der")
        try spkiP256(external(SecKeyCopyPublicKey(ec)!)).write(to: ecPub)
        try (SecKeyCreateSignature(ec, .ecdsaSignatureMessageX962SHA256, try Data(contentsOf: message) as CFData, &error)! as Data).write(to: sigFile)
        try run(openssl, ["dgst", "-sha256", "-verify", ecPub.path, "-keyform", "DER", "-signature", sigFile.path, message.path])
        let rsa = try make(kSecAttrKeyTypeRSA, 2048)
        let pkcs1 = dir.appendingPathComponent("rsa-pkcs1.der"), rsaPub = dir.appendingPathComponent("rsa.pem")
        try external(SecKeyCopyPublicKey(rsa)!).write(to: pkcs1)
        try run(openssl, ["rsa", "-RSAPublicKey_in", "-inform", "DER", "-in", pkcs1.path, "-pubout", "-out", rsaPub.path])
        for (algorithm, options) in [(SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA256, [String]()),
                                     (.rsaSignatureMessagePSSSHA256, ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"])] {
            try (SecKeyCreateSignature(rsa, algorithm, try Data(contentsOf: message) as CFData, &error)! as Data).write(to: sigFile)
            try run(openssl, ["dgst", "-sha256", "-verify", rsaPub.path] + options + ["-signature", sigFile.path, message.path])
        }
        // Our private RSA representation is the PKCS#1 RSAPrivateKey openssl reads.
        let rsaPriv = dir.appendingPathComponent("rsa-priv.der")
        try external(rsa).write(to: rsaPriv)
        try run(openssl, ["rsa", "-inform", "DER", "-in", rsaPriv.path, "-check", "-noout"])

        // openssl's, verified here.
        let ecKey = dir.appendingPathComponent("ec-key.pem"), ecSPKI = dir.appendingPathComponent("ec-pub.der")
        try run(openssl, ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", ecKey.path])
        try run(openssl, ["ec", "-in", ecKey.path, "-pubout", "-outform", "DER", "-out", ecSPKI.path])
        try run(openssl, ["dgst", "-sha256", "-sign", ecKey.path, "-out", sigFile.path, message.path])
        let point = try Data(contentsOf: ecSPKI).suffix(65)
        let theirEC = try XCTUnwrap(SecKeyCreateWithData(point as CFData, [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                                                                          kSecAttrKeyClass: kSecAttrKeyClassPublic] as CFDictionary, &error))
        XCTAssertTrue(SecKeyVerifySignature(theirEC, .ecdsaSignatureMessageX962SHA256, try Data(contentsOf: message) as CFData,
                                            try Data(contentsOf: sigFile) as CFData, &error))
        let rsaKey = dir.appendingPathComponent("rsa-key.pem"), rsaDER = dir.appendingPathComponent("rsa-pub.der")
        try run(openssl, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", rsaKey.path])
        try run(openssl, ["rsa", "-in", rsaKey.path, "-RSAPublicKey_out", "-outform", "DER", "-out", rsaDER.path])
        let theirRSA = try XCTUnwrap(SecKeyCreateWithData(try Data(contentsOf: rsaDER) as CFData,
                                                          [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPublic] as CFDictionary, &error))
        XCTAssertEqual(SecKeyGetBlockSize(theirRSA), 256)
        for (algorithm, options) in [(SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA256, [String]()),
                                     (.rsaSignatureMessagePSSSHA256, ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:digest"])] {
            try run(openssl, ["dgst", "-sha256", "-sign", rsaKey.path] + options + ["-out", sigFile.path, message.path])
            XCTAssertTrue(SecKeyVerifySignature(theirRSA, algorithm, try Data(contentsOf: message) as CFData,
                                                try Data(contentsOf: sigFile) as CFData, &error), "\(algorithm.rawValue)")
        }
    }

    // MARK: Encryption and key exchange

    func testEncryptionRoundTripsAndRefusals() throws {
        let rsa = try make(kSecAttrKeyTypeRSA, 2048)
        let ec = try make(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let plain = Data("a secret message".utf8)
        var error: Unmanaged<CFError>?
        for (key, algorithm) in [(rsa, SecKeyAlgorithm.rsaEncryptionOAEPSHA1), (rsa, .rsaEncryptionOAEPSHA256), (rsa, .rsaEncryptionPKCS1),
                                 (ec, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM), (ec, .eciesEncryptionStandardX963SHA256AESGCM),
                                 (ec, .eciesEncryptionStandardVariableIVX963SHA256AESGCM)] {
            let pub = SecKeyCopyPublicKey(key)!
            XCTAssertTrue(SecKeyIsAlgorithmSupported(pub, .encrypt, algorithm))
            XCTAssertTrue(SecKeyIsAlgorithmSupported(key, .decrypt, algorithm))
            XCTAssertFalse(SecKeyIsAlgorithmSupported(pub, .decrypt, algorithm))
            let ct = try XCTUnwrap(SecKeyCreateEncryptedData(pub, algorithm, plain as CFData, &error), "\(algorithm.rawValue)")
            XCTAssertEqual(SecKeyCreateDecryptedData(key, algorithm, ct, &error) as Data?, plain)
            var bad = ct as Data
            bad[bad.count - 1] ^= 1
            XCTAssertNil(SecKeyCreateDecryptedData(key, algorithm, bad as CFData, &error))
            XCTAssertNotNil(code(error))
        }
        XCTAssertNil(SecKeyCreateEncryptedData(rsa, .rsaEncryptionOAEPSHA256, Data(count: 256 - 2 * 32 - 1) as CFData, &error))
        XCTAssertEqual(code(error), Int(errSecParam), "too long for OAEP-SHA256 with a 2048-bit key")
    }

    func testKeyExchange() throws {
        let a = try make(kSecAttrKeyTypeECSECPrimeRandom, 521), b = try make(kSecAttrKeyTypeECSECPrimeRandom, 521)
        var error: Unmanaged<CFError>?
        let ab = try XCTUnwrap(SecKeyCopyKeyExchangeResult(a, .ecdhKeyExchangeStandard, SecKeyCopyPublicKey(b)!, [:] as CFDictionary, &error))
        let ba = SecKeyCopyKeyExchangeResult(b, .ecdhKeyExchangeCofactor, SecKeyCopyPublicKey(a)!, [:] as CFDictionary, &error)
        XCTAssertEqual(ab as Data, ba as Data?)
        XCTAssertEqual((ab as Data).count, 66)
        let params: [String: Any] = [kSecKeyKeyExchangeParameterRequestedSize as String: 40,
                                     kSecKeyKeyExchangeParameterSharedInfo as String: Data("info".utf8)]
        let k1 = SecKeyCopyKeyExchangeResult(a, .ecdhKeyExchangeStandardX963SHA256, SecKeyCopyPublicKey(b)!, params as CFDictionary, &error)
        let k2 = SecKeyCopyKeyExchangeResult(b, .ecdhKeyExchangeStandardX963SHA256, SecKeyCopyPublicKey(a)!, params as CFDictionary, &error)
        XCTAssertEqual((k1 as Data?)?.count, 40)
        XCTAssertEqual(k1 as Data?, k2 as Data?)
        XCTAssertNil(SecKeyCopyKeyExchangeResult(a, .ecdhKeyExchangeStandardX963SHA256, SecKeyCopyPublicKey(b)!, [:] as CFDictionary, &error))
        XCTAssertEqual(code(error), Int(errSecParam), "the requested size is required")
        let p256 = try make(kSecAttrKeyTypeECSECPrimeRandom, 256)
        XCTAssertNil(SecKeyCopyKeyExchangeResult(a, .ecdhKeyExchangeStandard, SecKeyCopyPublicKey(p256)!, [:] as CFDictionary, &error))
        XCTAssertEqual(code(error), Int(errSecParam))
    }

    func testAlgorithmRawValuesAreApples() {
        XCTAssertEqual(SecKeyAlgorithm.ecdsaSignatureMessageX962SHA256.rawValue as String, "algid:sign:ECDSA:message-X962:SHA256")
        XCTAssertEqual(SecKeyAlgorithm.rsaSignatureMessagePSSSHA256.rawValue as String, "algid:sign:RSA:message-PSS:SHA256:SHA256:32")
        XCTAssertEqual(SecKeyAlgorithm.rsaEncryptionOAEPSHA256.rawValue as String, "algid:encrypt:RSA:OAEP:SHA256")
        XCTAssertEqual(SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM.rawValue as String,
                       "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
        XCTAssertEqual(SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA256.rawValue as String, "algid:keyexchange:ECDH:KDFX963:SHA256")
        XCTAssertEqual(SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA256" as CFString), .ecdsaSignatureMessageX962SHA256)
        XCTAssertEqual(kSecPrivateKeyAttrs as String, "private")
        XCTAssertEqual(kSecKeyKeyExchangeParameterRequestedSize as String, "requestedSize")
    }
}
