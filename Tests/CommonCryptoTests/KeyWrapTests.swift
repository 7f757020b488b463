import CommonCrypto
import XCTest

/// CommonSymmetricKeywrap.h: RFC 3394 section 4's six vectors both ways, and the statuses for a
/// bad KEK, a key that is not whole 64-bit blocks, too little room and a tampered wrapped key.
final class KeyWrapTests: XCTestCase {
    let kek = hex("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F")
    let keyData = hex("00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F")

    func testRFC3394Vectors() {
        let vectors: [(kek: Int, key: Int, wrapped: String)] = [
            (16, 16, "1FA68B0A8112B447 AEF34BD8FB5A7B82 9D3E862371D2CFE5"),
            (24, 16, "96778B25AE6CA435 F92B5B97C050AED2 468AB8A17AD84E5D"),
            (32, 16, "64E8C3F9CE0F5BA2 63E9777905818A2A 93C8191E7D6E8AE7"),
            (24, 24, "031D33264E15D332 68F24EC260743EDC E1C6C7DDEE725A93 6BA814915C6762D2"),
            (32, 24, "A8F9BC1612C68B3F F6E6F4FBE30E71E4 769C8B80A32CB895 8CD5D17D6B254DA1"),
            (32, 32, "28C9F404C4B810F4 CBCCB35CFB87F826 3F5786E2D80ED326 CBC7F0E71A99F43B FB988B9B7A02DD21"),
        ]
        for v in vectors {
            let kek = Array(self.kek[0..<v.kek]), key = Array(keyData[0..<v.key]), expected = hex(v.wrapped)
            XCTAssertEqual(CCSymmetricWrappedSize(CCWrappingAlgorithm(kCCWRAPAES), key.count), expected.count)
            var wrapped = [UInt8](repeating: 0, count: CCSymmetricWrappedSize(CCWrappingAlgorithm(kCCWRAPAES), key.count))
            var wrappedLength = wrapped.count
            XCTAssertEqual(CCSymmetricKeyWrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, kek, kek.count,
                                              key, key.count, &wrapped, &wrappedLength), Int32(kCCSuccess))
            XCTAssertEqual(wrappedLength, expected.count)
            XCTAssertEqual(wrapped, expected, "KEK \(v.kek * 8), key \(v.key * 8)")

            var unwrapped = [UInt8](repeating: 0, count: CCSymmetricUnwrappedSize(CCWrappingAlgorithm(kCCWRAPAES), expected.count))
            var unwrappedLength = unwrapped.count
            XCTAssertEqual(CCSymmetricKeyUnwrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, kek, kek.count,
                                                expected, expected.count, &unwrapped, &unwrappedLength), Int32(kCCSuccess))
            XCTAssertEqual(unwrappedLength, key.count)
            XCTAssertEqual(unwrapped, key)
        }
    }

    func testDefaultIVWhenNil() {
        var wrapped = [UInt8](repeating: 0, count: 24)
        var length = 24
        XCTAssertEqual(CCSymmetricKeyWrap(CCWrappingAlgorithm(kCCWRAPAES), nil, 0, Array(kek[0..<16]), 16, Array(keyData[0..<16]),
                                          16, &wrapped, &length), Int32(kCCSuccess))
        XCTAssertEqual(wrapped, hex("1FA68B0A8112B447 AEF34BD8FB5A7B82 9D3E862371D2CFE5"))
    }

    func testStatuses() {
        let kek16 = Array(kek[0..<16])
        var out = [UInt8](repeating: 0xEE, count: 64)
        var length = 64
        // A key that is not whole 64-bit blocks, and one shorter than two of them.
        XCTAssertEqual(CCSymmetricKeyWrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, kek16, 16,
                                          Array(keyData[0..<20]), 20, &out, &length), Int32(kCCParamError))
        XCTAssertEqual(out, [UInt8](repeating: 0, count: 64), "the output is cleared on failure")
        length = 64
        XCTAssertEqual(CCSymmetricKeyWrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, kek16, 16,
                                          Array(keyData[0..<8]), 8, &out, &length), Int32(kCCParamError))
        // A KEK that is not an AES key.
        length = 64
        XCTAssertEqual(CCSymmetricKeyWrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, Array(kek[0..<17]), 17,
                                          Array(keyData[0..<16]), 16, &out, &length), Int32(kCCParamError))
        // Too little room.
        length = 23
        XCTAssertEqual(CCSymmetricKeyWrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, kek16, 16,
                                          Array(keyData[0..<16]), 16, &out, &length), Int32(kCCParamError))

        // A tampered wrapped key, and the wrong KEK: kCCDecodeError, the output cleared.
        var wrapped = hex("1FA68B0A8112B447 AEF34BD8FB5A7B82 9D3E862371D2CFE5")
        wrapped[23] ^= 1
        var key = [UInt8](repeating: 0xEE, count: 16)
        var keyLength = 16
        XCTAssertEqual(CCSymmetricKeyUnwrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, kek16, 16,
                                            wrapped, wrapped.count, &key, &keyLength), Int32(kCCDecodeError))
        XCTAssertEqual(key, [UInt8](repeating: 0, count: 16))
        wrapped[23] ^= 1
        keyLength = 16
        XCTAssertEqual(CCSymmetricKeyUnwrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, Array(kek[1..<17]), 16,
                                            wrapped, wrapped.count, &key, &keyLength), Int32(kCCDecodeError))
        // A wrapped key that is not whole blocks, and too little room for the key.
        keyLength = 16
        XCTAssertEqual(CCSymmetricKeyUnwrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, kek16, 16,
                                            wrapped, 23, &key, &keyLength), Int32(kCCParamError))
        keyLength = 15
        XCTAssertEqual(CCSymmetricKeyUnwrap(CCWrappingAlgorithm(kCCWRAPAES), CCrfc3394_iv, CCrfc3394_ivLen, kek16, 16,
                                            wrapped, wrapped.count, &key, &keyLength), Int32(kCCParamError))
    }
}
