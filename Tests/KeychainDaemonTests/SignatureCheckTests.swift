import KeychainfsAccess
import KeychainCore
import KeychainModel
import KeychainCrypto
import KeychainKeys
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// checkSignature through the real handlers: the daemon says whether a public key made a
/// signature, for clients that link no library for the key's type (the SSH agent).
final class SignatureCheckTests: XCTestCase {
    private var d: InProcessDaemon!
    let message = Array("session identifier".utf8)

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop() }

    private func check(_ key: AsymmetricKey, _ algorithm: String, _ signature: [UInt8], message: [UInt8]? = nil,
                       as caller: CallerIdentity = InProcessDaemon.owner) throws -> KeychainStatus {
        let request = SignatureCheck(keyType: key.appleTypeCode, publicKey: key.publicBytes(), algorithm: algorithm,
                                     signedData: message ?? self.message, signature: signature)
        return try d.call(request.request, as: caller).status
    }

    func testECDSAAndRSASignaturesAreCheckedAndWrongOnesRefused() throws {
        let ec = try AsymmetricKey.generate(.p384)
        let ecSignature = try ec.sign(digest: DigestAlgorithm.sha384.hash(message), hash: .sha384, scheme: .ecdsaX962)
        let ecAlgorithm = "algid:sign:ECDSA:message-X962:SHA384"
        XCTAssertEqual(try check(ec, ecAlgorithm, ecSignature), .success)
        XCTAssertEqual(try check(ec, ecAlgorithm, ecSignature, message: message + [0]), .verifyFailed, "another message")
        XCTAssertEqual(try check(ec, ecAlgorithm, Array(ecSignature.dropLast())), .verifyFailed, "a signature cut short")
        XCTAssertEqual(try check(try AsymmetricKey.generate(.p384), ecAlgorithm, ecSignature), .verifyFailed, "another key")

        let rsa = try AsymmetricKey.generateRSA(bits: 2048)
        let rsaAlgorithm = "algid:sign:RSA:message-PKCS1v15:SHA512"
        let rsaSignature = try rsa.sign(digest: DigestAlgorithm.sha512.hash(message), hash: .sha512, scheme: .pkcs1v15)
        XCTAssertEqual(try check(rsa, rsaAlgorithm, rsaSignature), .success)
        XCTAssertEqual(try check(rsa, "algid:sign:RSA:message-PKCS1v15:SHA256", rsaSignature), .verifyFailed, "another digest")
    }

    func testRequestsThatCannotBeCheckedAreParamOrUnimplemented() throws {
        let ec = try AsymmetricKey.generate(.p256)
        XCTAssertEqual(try check(ec, "algid:encrypt:RSA:PKCS1", [1]), .unimplemented, "not a signature algorithm")
        XCTAssertEqual(try check(ec, "algid:sign:RSA:message-PKCS1v15:SHA256", [1]), .param, "an algorithm of another key type")
        let garbage = SignatureCheck(keyType: 73, publicKey: [4, 1, 2], algorithm: "algid:sign:ECDSA:message-X962:SHA256",
                                     signedData: message, signature: [1])
        XCTAssertEqual(try d.call(garbage.request).status, .param, "a key that does not decode")
        XCTAssertEqual(try check(ec, "algid:sign:ECDSA:message-X962:SHA256", [1], as: InProcessDaemon.outsider), .authFailed,
                       "a caller entitled to no group")
    }
}
