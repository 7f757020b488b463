import KeychainCrypto
import XCTest

/// Known-answer vectors computed with independent implementations (pycryptodome, Python's
/// hashlib, the Argon2 reference code), plus the published draft-irtf-cfrg-xchacha A.3.1 vector.
final class KnownAnswerTests: XCTestCase {
    func testXChaCha20Poly1305DraftVector() throws {
        let key = try SecureBytes(copying: hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"))
        let nonce = hex("404142434445464748494a4b4c4d4e4f5051525354555657")
        let aad = hex("50515253c0c1c2c3c4c5c6c7")
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let expected = hex("bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff921f9664c97637da9768812f615c68b13b52e" + "c0875924c1c7987947deafd8780acf49")
        let box = plaintext.withUnsafeBytes { AEAD.seal($0, key: key, associatedData: aad, nonce: nonce) }
        XCTAssertEqual(Array(box[0..<24]), nonce)
        XCTAssertEqual(Array(box[24...]), expected)
        let opened = try AEAD.open(box, key: key, associatedData: aad)
        XCTAssertEqual(opened.withUnsafeBytes { [UInt8]($0) }, plaintext)
    }

    func testXChaCha20Poly1305EmptyMessage() throws {
        let key = try SecureBytes(copying: [UInt8](repeating: 1, count: 32))
        let nonce = [UInt8](repeating: 2, count: 24)
        let box = AEAD.seal(UnsafeRawBufferPointer(start: nil, count: 0), key: key, associatedData: [], nonce: nonce)
        XCTAssertEqual(Array(box[24...]), hex("827df541043684930817734c9ba90ba5"))
        XCTAssertEqual(try AEAD.open(box, key: key, associatedData: []).count, 0)
    }

    func testAEADRejectsEveryFlippedByteAndWrongAssociatedData() throws {
        let key = try SecureBytes.random(count: 32)
        let box = Array("secret".utf8).withUnsafeBytes { AEAD.seal($0, key: key, associatedData: [7]) }
        for i in box.indices {
            var bad = box
            bad[i] ^= 0x01
            XCTAssertThrowsError(try AEAD.open(bad, key: key, associatedData: [7]), "byte \(i)")
        }
        XCTAssertThrowsError(try AEAD.open(box, key: key, associatedData: [8])) {
            XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
        }
        XCTAssertThrowsError(try AEAD.open(Array(box[0..<39]), key: key, associatedData: [7])) {
            XCTAssertEqual($0 as? CryptoError, .malformedCiphertext)
        }
    }

    func testBlake2bVectors() throws {
        XCTAssertEqual(KeyedHash.hash(Array("abc".utf8), key: nil, length: 64),
                       hex("ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"))
        let key32 = try SecureBytes(copying: (0..<32).map { UInt8($0) })
        XCTAssertEqual(KeyedHash.hash(Array("keychainfs index token".utf8), key: key32, length: 32),
                       hex("6aaf99ea7aa45417ba6f51da7195d3a104ce05a8eb0f42b0fbb23eae2f74d381"))
        let key64 = try SecureBytes(copying: (0..<64).map { UInt8($0) })
        XCTAssertEqual(KeyedHash.hash([], key: key64, length: 64),
                       hex("10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871799aaa4786b5e996e8f0f4eb981fc214b005f42d2ff4233499391653df7aefcbc13fc51568"))
    }

    func testArgon2idVectors() throws {
        let cases: [(String, [UInt8], UInt64, UInt64, String)] = [
            ("password", Array("somesaltsomesalt".utf8), 2, 67_108_864,
             "fc33b78139231d34b71626bd6245c1d72efa190ad605c3d8166a72adcedfa2c2"),
            ("correct horse battery staple", (0..<16).map { UInt8($0) }, 3, 8_388_608,
             "947312f62e4ac86f63c9b622f147b0061846739f53dd00f2d2236cd03db413ac"),
            ("", [UInt8](repeating: 0xaa, count: 16), 1, 8192,
             "0edb2ecb9fda2134ff2b911461a779e7b51abf3169bee068f37df94236d10599"),
        ]
        for (password, salt, ops, mem, expected) in cases {
            let key = try PasswordHash.deriveKey(passphrase: SecureBytes(copying: Array(password.utf8)), salt: salt,
                                                 parameters: KDFParameters(opsLimit: ops, memLimit: mem))
            XCTAssertEqual(key.withUnsafeBytes { [UInt8]($0) }, hex(expected), password)
        }
    }

    func testArgon2idPresetsAndLimits() throws {
        XCTAssertEqual(KDFParameters.interactive, KDFParameters(opsLimit: 2, memLimit: 64 << 20))
        XCTAssertEqual(KDFParameters.moderate, KDFParameters(opsLimit: 3, memLimit: 256 << 20))
        XCTAssertEqual(KDFParameters.sensitive, KDFParameters(opsLimit: 4, memLimit: 1 << 30))
        XCTAssertEqual(KDFParameters(presetName: "moderate"), .moderate)
        XCTAssertNil(KDFParameters(presetName: "fast"))
        XCTAssertThrowsError(try PasswordHash.deriveKey(passphrase: SecureBytes(count: 1), salt: [1],
                                                        parameters: .minimum))
        XCTAssertThrowsError(try PasswordHash.deriveKey(passphrase: SecureBytes(count: 1), salt: [UInt8](repeating: 0, count: 16),
                                                        parameters: KDFParameters(opsLimit: 0, memLimit: 8192)))
    }
}

func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var it = s.makeIterator()
    while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
    return out
}
