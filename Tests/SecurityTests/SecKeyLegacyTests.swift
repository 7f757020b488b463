import Foundation
import KeychainTestSupport
import Security
import XCTest

/// What RSA and JWT libraries that support older systems ask of `Security`: keys made from DER
/// with the DER length as their size, the legacy calls (`SecKeyEncrypt`, `SecKeyDecrypt`,
/// `SecKeyRawSign`, `SecKeyRawVerify`) mixed with the newer ones, raw RSA, JWS signatures, and
/// Apple's error text. Keys in this process; `SecKeyLegacyDaemonTests` has keys in the vault.
final class SecKeyLegacyTests: XCTestCase {
    var dir: URL!

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("kcfs-legacy-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: dir)
    }

    /// An RSA key pair as such a library holds it: the private key and the public key both made
    /// from their PKCS#1 DER with `kSecAttrKeySizeInBits` the DER length x 8.
    func rsaPairFromDER(bits: Int = 2048) throws -> (priv: SecKey, pub: SecKey) {
        var error: Unmanaged<CFError>?
        let made = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: bits] as CFDictionary, &error))
        let privDER = try XCTUnwrap(SecKeyCopyExternalRepresentation(made, &error) as Data?)
        let pubDER = try XCTUnwrap(SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(made)!, &error) as Data?)
        let priv = try XCTUnwrap(SecKeyCreateWithData(privDER as CFData, [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPrivate,
                                                                          kSecAttrKeySizeInBits: privDER.count * 8] as CFDictionary, &error))
        let pub = try XCTUnwrap(SecKeyCreateWithData(pubDER as CFData, [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPublic,
                                                                        kSecAttrKeySizeInBits: pubDER.count * 8] as CFDictionary, &error))
        return (priv, pub)
    }

    func code(_ error: Unmanaged<CFError>?) -> Int? { error.map { CFErrorGetCode($0.takeRetainedValue()) } }

    func sha256(_ data: Data) throws -> Data {
        let file = dir.appendingPathComponent("digest-input")
        try data.write(to: file)
        return try TLSMaterial.openssl(["dgst", "-sha256", "-binary", file.path])
    }

    // Legacy calls over Data, as the libraries wrap them.

    func encrypt(_ key: SecKey, _ padding: SecPadding, _ plain: Data, room: Int? = nil) -> (OSStatus, Data, Int) {
        var out = [UInt8](repeating: 0, count: room ?? SecKeyGetBlockSize(key))
        var length = out.count
        let status = plain.withUnsafeBytes { SecKeyEncrypt(key, padding, $0.bindMemory(to: UInt8.self).baseAddress!, plain.count, &out, &length) }
        return (status, Data(out.prefix(status == errSecSuccess ? length : 0)), length)
    }

    func decrypt(_ key: SecKey, _ padding: SecPadding, _ cipher: Data, room: Int? = nil) -> (OSStatus, Data, Int) {
        var out = [UInt8](repeating: 0, count: room ?? SecKeyGetBlockSize(key))
        var length = out.count
        let status = SecKeyDecrypt(key, padding, [UInt8](cipher), cipher.count, &out, &length)
        return (status, Data(out.prefix(status == errSecSuccess ? length : 0)), length)
    }

    func rawSign(_ key: SecKey, _ padding: SecPadding, _ data: Data, room: Int = 512) -> (OSStatus, Data, Int) {
        var out = [UInt8](repeating: 0, count: room)
        var length = room
        let status = SecKeyRawSign(key, padding, [UInt8](data), data.count, &out, &length)
        return (status, Data(out.prefix(status == errSecSuccess ? length : 0)), length)
    }

    func rawVerify(_ key: SecKey, _ padding: SecPadding, _ data: Data, _ sig: Data) -> OSStatus {
        SecKeyRawVerify(key, padding, [UInt8](data), data.count, [UInt8](sig), sig.count)
    }

    // MARK: Keys from data

    func testKeySizeAttributeIsIgnoredAsAppleIgnoresIt() throws {
        let (priv, pub) = try rsaPairFromDER()
        XCTAssertEqual(SecKeyGetBlockSize(pub), 256)
        XCTAssertEqual(SecKeyGetBlockSize(priv), 256)
        XCTAssertEqual((SecKeyCopyAttributes(pub) as? [String: Any])?[kSecAttrKeySizeInBits as String] as? Int, 2048,
                       "the size is the key's, not the attribute's")
        var error: Unmanaged<CFError>?
        let plain = Data("from a DER-sized key".utf8)
        let sealed = try XCTUnwrap(SecKeyCreateEncryptedData(pub, .rsaEncryptionOAEPSHA256, plain as CFData, &error))
        XCTAssertEqual(SecKeyCreateDecryptedData(priv, .rsaEncryptionOAEPSHA256, sealed, &error) as Data?, plain)
        // Any size, also for EC: Apple's SecKeyCreateWithData never reads the attribute.
        let ec = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom] as CFDictionary, &error))
        let point = try XCTUnwrap(SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(ec)!, &error) as Data?)
        let ecPub = SecKeyCreateWithData(point as CFData, [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic,
                                                           kSecAttrKeySizeInBits: 384] as CFDictionary, &error)
        XCTAssertEqual(ecPub, SecKeyCopyPublicKey(ec))
        XCTAssertEqual(SecKeyGetBlockSize(try XCTUnwrap(ecPub)), 32)
    }

    // MARK: Legacy encryption

    func testLegacyPKCS1EncryptionMixesWithTheNewerCalls() throws {
        let (priv, pub) = try rsaPairFromDER()
        let plain = Data("a token for the server".utf8)
        let (status, cipher, length) = encrypt(pub, .PKCS1, plain)
        XCTAssertEqual(status, errSecSuccess)
        XCTAssertEqual(length, 256)
        var error: Unmanaged<CFError>?
        XCTAssertEqual(SecKeyCreateDecryptedData(priv, .rsaEncryptionPKCS1, cipher as CFData, &error) as Data?, plain)

        let sealed = try XCTUnwrap(SecKeyCreateEncryptedData(pub, .rsaEncryptionPKCS1, plain as CFData, &error) as Data?)
        let opened = decrypt(priv, .PKCS1, sealed)
        XCTAssertEqual(opened.0, errSecSuccess)
        XCTAssertEqual(opened.1, plain)
        XCTAssertEqual(opened.2, plain.count)
        // A private key encrypts with its public half; the longest PKCS1 plaintext is k - 11.
        XCTAssertEqual(decrypt(priv, .PKCS1, encrypt(priv, .PKCS1, plain).1).1, plain)
        XCTAssertEqual(encrypt(pub, .PKCS1, Data(count: 245)).0, errSecSuccess)
        XCTAssertEqual(encrypt(pub, .PKCS1, Data(count: 246)).0, errSecParam)
        XCTAssertEqual(decrypt(priv, .PKCS1, Data(count: 256)).0, errSecParam, "a block that does not decrypt")
    }

    func testLegacyOAEPIsSHA1() throws {
        let (priv, pub) = try rsaPairFromDER()
        let plain = Data("oaep".utf8)
        let (status, cipher, _) = encrypt(pub, .OAEP, plain)
        XCTAssertEqual(status, errSecSuccess)
        XCTAssertEqual(decrypt(priv, .OAEP, cipher).1, plain)
        var error: Unmanaged<CFError>?
        XCTAssertEqual(SecKeyCreateDecryptedData(priv, .rsaEncryptionOAEPSHA1, cipher as CFData, &error) as Data?, plain)
        let sealed = try XCTUnwrap(SecKeyCreateEncryptedData(pub, .rsaEncryptionOAEPSHA1, plain as CFData, &error) as Data?)
        XCTAssertEqual(decrypt(priv, .OAEP, sealed).1, plain)
        XCTAssertEqual(encrypt(pub, .OAEP, Data(count: 256 - 42)).0, errSecSuccess)
        XCTAssertEqual(encrypt(pub, .OAEP, Data(count: 256 - 41)).0, errSecParam)
        XCTAssertEqual(encrypt(pub, .PKCS1SHA256, plain).0, errSecParam, "a signature padding does not encrypt")
        XCTAssertEqual(encrypt(pub, .PKCS1MD5, plain).0, errSecParam)
    }

    func testBufferTooSmallIsErrSecParamAndTheLengthIsLeftAsApplesIs() throws {
        let (priv, pub) = try rsaPairFromDER()
        let plain = Data("short".utf8)
        let tooSmall = encrypt(pub, .PKCS1, plain, room: 100)
        XCTAssertEqual(tooSmall.0, errSecParam)
        XCTAssertEqual(tooSmall.2, 100, "Apple writes the length only on success")
        XCTAssertEqual(SecKeyGetBlockSize(pub), 256, "the length needed")
        let fits = encrypt(pub, .PKCS1, plain, room: SecKeyGetBlockSize(pub))
        XCTAssertEqual(fits.0, errSecSuccess)
        let small = decrypt(priv, .PKCS1, fits.1, room: 4)
        XCTAssertEqual(small.0, errSecParam)
        XCTAssertEqual(small.2, 4)
        XCTAssertEqual(decrypt(priv, .PKCS1, fits.1, room: 5).1, plain, "exactly the plaintext's length fits")
        let sign = rawSign(priv, .PKCS1SHA256, Data(count: 32), room: 255)
        XCTAssertEqual(sign.0, errSecParam)
        XCTAssertEqual(sign.2, 255)
        XCTAssertEqual(rawSign(priv, .PKCS1SHA256, Data(count: 32), room: 256).0, errSecSuccess)
    }

    // MARK: Raw RSA

    func testRawRSARoundTripsWithLegacyAndNewerCalls() throws {
        let (priv, pub) = try rsaPairFromDER()
        var error: Unmanaged<CFError>?
        let short = Data("raw".utf8)
        // Legacy []: the short input is a number; decryption drops the leading zeros again.
        let (status, cipher, length) = encrypt(pub, [], short)
        XCTAssertEqual(status, errSecSuccess)
        XCTAssertEqual(length, 256)
        XCTAssertEqual(decrypt(priv, [], cipher).1, short)
        // The newer call gives the whole block.
        let block = try XCTUnwrap(SecKeyCreateDecryptedData(priv, .rsaEncryptionRaw, cipher as CFData, &error) as Data?)
        XCTAssertEqual(block, Data(count: 256 - short.count) + short)
        XCTAssertEqual(SecKeyCreateEncryptedData(pub, .rsaEncryptionRaw, short as CFData, &error) as Data?, cipher,
                       "raw RSA is deterministic")
        // Against openssl: its raw private operation undoes ours.
        let keyFile = dir.appendingPathComponent("rsa.der"), inFile = dir.appendingPathComponent("cipher")
        try (SecKeyCopyExternalRepresentation(priv, &error) as Data?)?.write(to: keyFile)
        try cipher.write(to: inFile)
        let theirs = try TLSMaterial.openssl(["pkeyutl", "-decrypt", "-keyform", "DER", "-inkey", keyFile.path, "-in", inFile.path,
                                              "-pkeyopt", "rsa_padding_mode:none"])
        XCTAssertEqual(theirs, block)

        // rsaSignatureRaw: a full block below the modulus, signed and recovered.
        var message = Data((0..<256).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) })
        message[0] = 0x01
        XCTAssertTrue(SecKeyIsAlgorithmSupported(priv, .sign, .rsaSignatureRaw))
        XCTAssertTrue(SecKeyIsAlgorithmSupported(pub, .verify, .rsaSignatureRaw))
        XCTAssertTrue(SecKeyIsAlgorithmSupported(pub, .encrypt, .rsaEncryptionRaw))
        XCTAssertFalse(SecKeyIsAlgorithmSupported(pub, .decrypt, .rsaEncryptionRaw))
        let sig = try XCTUnwrap(SecKeyCreateSignature(priv, .rsaSignatureRaw, message as CFData, &error) as Data?)
        XCTAssertEqual(sig.count, 256)
        XCTAssertTrue(SecKeyVerifySignature(pub, .rsaSignatureRaw, message as CFData, sig as CFData, &error))
        XCTAssertEqual(SecKeyCreateEncryptedData(pub, .rsaEncryptionRaw, sig as CFData, &error) as Data?, message)
        var other = message
        other[255] ^= 1
        XCTAssertFalse(SecKeyVerifySignature(pub, .rsaSignatureRaw, other as CFData, sig as CFData, &error))
        XCTAssertEqual(code(error), Int(errSecVerifyFailed))
        // Legacy [] signs the same way and verifies.
        let legacy = rawSign(priv, [], message)
        XCTAssertEqual(legacy.0, errSecSuccess)
        XCTAssertEqual(legacy.1, sig)
        XCTAssertEqual(rawVerify(pub, [], message, sig), errSecSuccess)
        XCTAssertEqual(rawVerify(pub, [], other, sig), errSSLCrypto, "the legacy calls answer errSSLCrypto, as Apple's do")

        // An input not less than the modulus, or longer than it, is errSecParam.
        for bad in [Data(repeating: 0xFF, count: 256), Data(count: 257)] {
            XCTAssertNil(SecKeyCreateEncryptedData(pub, .rsaEncryptionRaw, bad as CFData, &error))
            XCTAssertEqual(code(error), Int(errSecParam))
            XCTAssertNil(SecKeyCreateSignature(priv, .rsaSignatureRaw, bad as CFData, &error))
            XCTAssertEqual(code(error), Int(errSecParam))
            XCTAssertNil(SecKeyCreateDecryptedData(priv, .rsaEncryptionRaw, bad as CFData, &error))
            XCTAssertEqual(code(error), Int(errSecParam))
            XCTAssertEqual(encrypt(pub, [], bad).0, errSecParam)
        }
    }

    // MARK: Legacy signatures

    func testRawSignWithPKCS1SHA256SignsADigestAsTheNewerDigestAlgorithm() throws {
        let (priv, pub) = try rsaPairFromDER()
        let message = Data("header.payload".utf8)
        let digest = try sha256(message)
        let (status, sig, length) = rawSign(priv, .PKCS1SHA256, digest)
        XCTAssertEqual(status, errSecSuccess)
        XCTAssertEqual(length, 256)
        var error: Unmanaged<CFError>?
        XCTAssertTrue(SecKeyVerifySignature(pub, .rsaSignatureDigestPKCS1v15SHA256, digest as CFData, sig as CFData, &error))
        XCTAssertEqual(SecKeyCreateSignature(priv, .rsaSignatureMessagePKCS1v15SHA256, message as CFData, &error) as Data?, sig,
                       "the DigestInfo is added: the same bytes as signing the message")
        XCTAssertEqual(rawVerify(pub, .PKCS1SHA256, digest, sig), errSecSuccess)
        XCTAssertEqual(rawVerify(pub, .PKCS1SHA256, try sha256(Data("other".utf8)), sig), errSSLCrypto)
        XCTAssertEqual(rawVerify(pub, .PKCS1SHA1, Data(digest.prefix(20)), sig), errSSLCrypto)
        XCTAssertEqual(rawSign(priv, .PKCS1SHA256, Data(digest.prefix(31))).0, errSecParam, "a digest of the wrong length")
        XCTAssertEqual(rawSign(priv, .PKCS1MD5, Data(count: 16)).0, errSecParam, "MD5 is refused as Apple's legacy call refuses it")
        XCTAssertEqual(rawSign(priv, .OAEP, digest).0, errSecParam)
        XCTAssertEqual(rawSign(pub, .PKCS1SHA256, digest).0, errSecUnimplemented, "a public key does not sign")
        // The other digests, and PKCS1 over a DigestInfo the caller encoded.
        for (padding, count) in [(SecPadding.PKCS1SHA1, 20), (.PKCS1SHA224, 28), (.PKCS1SHA384, 48), (.PKCS1SHA512, 64)] {
            let d = Data((0..<count).map { UInt8($0) })
            let s = rawSign(priv, padding, d)
            XCTAssertEqual(s.0, errSecSuccess, "\(padding.rawValue)")
            XCTAssertEqual(rawVerify(pub, padding, d, s.1), errSecSuccess)
        }
        let digestInfo = Data([0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20]) + digest
        XCTAssertEqual(rawSign(priv, .PKCS1, digestInfo).1, sig, "PKCS1 takes the DigestInfo as given")
        XCTAssertEqual(rawVerify(pub, .PKCS1, digestInfo, sig), errSecSuccess)
    }

    func testLegacyECDSASignsADigest() throws {
        var error: Unmanaged<CFError>?
        let ec = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom] as CFDictionary, &error))
        let pub = try XCTUnwrap(SecKeyCopyPublicKey(ec))
        let digest = try sha256(Data("ecdsa".utf8))
        let (status, sig, _) = rawSign(ec, .PKCS1, digest)
        XCTAssertEqual(status, errSecSuccess)
        XCTAssertEqual(sig.first, 0x30, "X9.62 DER")
        XCTAssertTrue(SecKeyVerifySignature(pub, .ecdsaSignatureDigestX962SHA256, digest as CFData, sig as CFData, &error))
        XCTAssertEqual(rawVerify(pub, .PKCS1, digest, sig), errSecSuccess)
        XCTAssertEqual(rawVerify(pub, [], digest, sig), errSecSuccess, "any padding but sigRaw is X9.62 for EC, as on Apple")
        XCTAssertEqual(encrypt(pub, .PKCS1, digest).0, errSecParam, "EC keys have no legacy encryption")
    }

    // MARK: JWS

    func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    func fromBase64url(_ text: Substring) -> Data? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }

    /// An X9.62 `ECDSA-Sig-Value` as JWS wants it (RFC 7518 3.4): `r || s`, each `size` bytes.
    func derToRaw(_ der: Data, size: Int) throws -> Data {
        let bytes = [UInt8](der)
        guard bytes.count > 2, bytes[0] == 0x30 else { throw CocoaError(.coderInvalidValue) }
        var i = bytes[1] & 0x80 != 0 ? 2 + Int(bytes[1] & 0x7f) : 2
        var out = Data()
        for _ in 0..<2 {
            guard bytes[i] == 0x02 else { throw CocoaError(.coderInvalidValue) }
            let length = Int(bytes[i + 1])
            var integer = Array(bytes[(i + 2)..<(i + 2 + length)])
            while integer.count > size, integer.first == 0 { integer.removeFirst() }
            out += Data(count: size - integer.count) + integer
            i += 2 + length
        }
        return out
    }

    /// `r || s` back to DER: each half without leading zeros, a zero added where the top bit is set.
    func rawToDER(_ raw: Data) -> Data {
        func integer(_ half: Data) -> [UInt8] {
            var bytes = Array(half.drop { $0 == 0 })
            if bytes.isEmpty || bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
            return [0x02, UInt8(bytes.count)] + bytes
        }
        let body = integer(raw.prefix(raw.count / 2)) + integer(raw.suffix(raw.count / 2))
        return Data([0x30, UInt8(body.count)] + body)
    }

    func testJWSES256AndRS256SignAndVerify() throws {
        var error: Unmanaged<CFError>?
        let claims = base64url(Data(#"{"sub":"1234567890","iat":1516239022}"#.utf8))

        // ES256: the DER signature of the message, sent as r || s.
        let ec = try XCTUnwrap(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256] as CFDictionary, &error))
        let ecInput = base64url(Data(#"{"alg":"ES256","typ":"JWT"}"#.utf8)) + "." + claims
        let der = try XCTUnwrap(SecKeyCreateSignature(ec, .ecdsaSignatureMessageX962SHA256, Data(ecInput.utf8) as CFData, &error) as Data?)
        let raw = try derToRaw(der, size: 32)
        XCTAssertEqual(raw.count, 64)
        let es256 = ecInput + "." + base64url(raw)
        // The verifier splits the token and turns r || s back into DER.
        let parts = es256.split(separator: ".")
        XCTAssertEqual(parts.count, 3)
        let received = try XCTUnwrap(fromBase64url(parts[2]))
        let ecPub = try XCTUnwrap(SecKeyCopyPublicKey(ec))
        XCTAssertTrue(SecKeyVerifySignature(ecPub, .ecdsaSignatureMessageX962SHA256, Data("\(parts[0]).\(parts[1])".utf8) as CFData,
                                            rawToDER(received) as CFData, &error))
        var tampered = received
        tampered[63] ^= 1
        XCTAssertFalse(SecKeyVerifySignature(ecPub, .ecdsaSignatureMessageX962SHA256, Data(ecInput.utf8) as CFData,
                                             rawToDER(tampered) as CFData, &error))
        XCTAssertEqual(code(error), Int(errSecVerifyFailed))

        // RS256 with keys made from DER, checked also through the legacy call on the digest.
        let (priv, pub) = try rsaPairFromDER()
        let rsInput = base64url(Data(#"{"alg":"RS256","typ":"JWT"}"#.utf8)) + "." + claims
        let sig = try XCTUnwrap(SecKeyCreateSignature(priv, .rsaSignatureMessagePKCS1v15SHA256, Data(rsInput.utf8) as CFData, &error) as Data?)
        let rs256 = rsInput + "." + base64url(sig)
        let rsParts = rs256.split(separator: ".")
        let rsSig = try XCTUnwrap(fromBase64url(rsParts[2]))
        XCTAssertTrue(SecKeyVerifySignature(pub, .rsaSignatureMessagePKCS1v15SHA256, Data(rsInput.utf8) as CFData, rsSig as CFData, &error))
        XCTAssertEqual(rawVerify(pub, .PKCS1SHA256, try sha256(Data(rsInput.utf8)), rsSig), errSecSuccess)
        XCTAssertFalse(SecKeyVerifySignature(pub, .rsaSignatureMessagePKCS1v15SHA256, Data((rsInput + "x").utf8) as CFData, rsSig as CFData, &error))
    }

    // MARK: Apple's error text

    func testErrorsCarryApplesDomainCodeAndDescription() throws {
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCreateWithData(Data([0x30, 0x03, 0x02, 0x01, 0x01]) as CFData,
                                          [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPublic] as CFDictionary, &error))
        let e = try XCTUnwrap(error?.takeRetainedValue())
        let reason = "RSA public key creation from data failed"
        let text = "The operation couldn’t be completed. (OSStatus error -50 - \(reason))"
        XCTAssertEqual(CFErrorGetDomain(e) as String, "NSOSStatusErrorDomain")
        XCTAssertEqual(CFErrorGetCode(e), -50)
        XCTAssertEqual(e.localizedDescription, text)
        XCTAssertEqual(CFErrorCopyDescription(e) as String?, text)
        XCTAssertEqual((CFErrorCopyUserInfo(e) as? [String: Any])?[NSDebugDescriptionErrorKey] as? String, reason, "the debug description is kept")
        XCTAssertEqual(String(describing: e), "Error Domain=NSOSStatusErrorDomain Code=-50 \"\(text)\" UserInfo={NSDebugDescription=\(reason)}")
        // Thrown and caught as a Swift Error, as the libraries do.
        do {
            throw e as Error
        } catch {
            XCTAssertEqual(error.localizedDescription, text)
            XCTAssertEqual((error as NSError).code, -50)
            XCTAssertEqual((error as NSError).domain, "NSOSStatusErrorDomain")
        }

        XCTAssertNil(SecKeyCreateWithData(Data(count: 65) as CFData, [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                                                                     kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, &error))
        XCTAssertEqual(error?.takeRetainedValue().localizedDescription,
                       "The operation couldn’t be completed. (OSStatus error -50 - EC private key creation from data failed)")
        XCTAssertNil(SecAccessControlCreateWithFlags(nil, "" as CFString, [], &error))
        XCTAssertEqual(error?.takeRetainedValue().localizedDescription,
                       "The operation couldn’t be completed. (OSStatus error -50 - SecAccessControl: invalid protection: )")
        // The errors of the other calls have the same form, with their reason.
        let (priv, _) = try rsaPairFromDER()
        XCTAssertNil(SecKeyCreateSignature(priv, .ecdsaSignatureMessageX962SHA256, Data() as CFData, &error))
        let other = try XCTUnwrap(error?.takeRetainedValue())
        XCTAssertEqual(other.code, Int(errSecUnimplemented))
        XCTAssertTrue(other.localizedDescription.hasPrefix("The operation couldn’t be completed. (OSStatus error -4 - "), other.localizedDescription)
    }
}

/// The legacy calls and raw RSA with a private key that stays in the daemon.
final class SecKeyLegacyDaemonTests: SecItemConformanceCase {
    func storedRSAKey() throws -> SecKey {
        let tag = Data(unique().utf8)
        var error: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: 2048,
                                     kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag,
                                                                     kSecAttrIsExtractable as String: false]]
        guard SecKeyCreateRandomKey(params as CFDictionary, &error) != nil else { throw error!.takeRetainedValue() as Error }
        let (status, result) = copyMatching([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag, kSecReturnRef as String: true])
        assertStatus(status, errSecSuccess, "r_Ref")
        return try XCTUnwrap(result as? SecKey)
    }

    func testStoredKeyDecryptsAndSignsThroughTheLegacyCalls() throws {
        let priv = try storedRSAKey()
        let pub = try XCTUnwrap(SecKeyCopyPublicKey(priv))
        var error: Unmanaged<CFError>?
        XCTAssertNil(SecKeyCopyExternalRepresentation(priv, &error), "the private key stays in the daemon")
        let plain = Data("for the vault's key".utf8)

        for padding in [SecPadding.PKCS1, .OAEP] {
            var cipher = [UInt8](repeating: 0, count: SecKeyGetBlockSize(pub))
            var cipherLength = cipher.count
            XCTAssertEqual(SecKeyEncrypt(pub, padding, [UInt8](plain), plain.count, &cipher, &cipherLength), errSecSuccess)
            var out = [UInt8](repeating: 0, count: 256)
            var outLength = out.count
            XCTAssertEqual(SecKeyDecrypt(priv, padding, cipher, cipherLength, &out, &outLength), errSecSuccess)
            XCTAssertEqual(Data(out.prefix(outLength)), plain)
            var small = 3
            XCTAssertEqual(SecKeyDecrypt(priv, padding, cipher, cipherLength, &out, &small), errSecParam, "buffer too small")
            XCTAssertEqual(small, 3)
        }

        // Raw RSA in the daemon: decryption of a raw block, and a raw signature.
        let raw = try XCTUnwrap(SecKeyCreateEncryptedData(pub, .rsaEncryptionRaw, plain as CFData, &error) as Data?)
        XCTAssertEqual(SecKeyCreateDecryptedData(priv, .rsaEncryptionRaw, raw as CFData, &error) as Data?, Data(count: 256 - plain.count) + plain)
        var out = [UInt8](repeating: 0, count: 256)
        var outLength = out.count
        XCTAssertEqual(SecKeyDecrypt(priv, [], [UInt8](raw), raw.count, &out, &outLength), errSecSuccess)
        XCTAssertEqual(Data(out.prefix(outLength)), plain)
        let block = Data([0x01]) + Data(repeating: 0x5a, count: 255)
        let rawSig = try XCTUnwrap(SecKeyCreateSignature(priv, .rsaSignatureRaw, block as CFData, &error) as Data?)
        XCTAssertTrue(SecKeyVerifySignature(pub, .rsaSignatureRaw, block as CFData, rawSig as CFData, &error))
        XCTAssertNil(SecKeyCreateSignature(priv, .rsaSignatureRaw, Data(repeating: 0xFF, count: 256) as CFData, &error))
        XCTAssertEqual(error.map { CFErrorGetCode($0.takeRetainedValue()) }, Int(errSecParam), "not less than the modulus")

        // SecKeyRawSign with PKCS1SHA256 over a digest, verified by the newer call.
        let digest = Data((0..<32).map { UInt8($0 * 3) })
        var sig = [UInt8](repeating: 0, count: 256)
        var sigLength = sig.count
        XCTAssertEqual(SecKeyRawSign(priv, .PKCS1SHA256, [UInt8](digest), digest.count, &sig, &sigLength), errSecSuccess)
        XCTAssertEqual(sigLength, 256)
        XCTAssertTrue(SecKeyVerifySignature(pub, .rsaSignatureDigestPKCS1v15SHA256, digest as CFData, Data(sig) as CFData, &error))
        XCTAssertEqual(SecKeyRawVerify(pub, .PKCS1SHA256, [UInt8](digest), digest.count, sig, sigLength), errSecSuccess)
        var tooSmall = 128
        XCTAssertEqual(SecKeyRawSign(priv, .PKCS1SHA256, [UInt8](digest), digest.count, &sig, &tooSmall), errSecParam)
        XCTAssertEqual(tooSmall, 128)
    }
}
