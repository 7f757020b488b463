import KeychainCore
import KeychainCrypto
import KeychainKeys
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// Private keys the daemon makes itself (`add` with the option `generate`, no secret): the
/// key is stored as the item's secret, its public key and application label are the daemon's,
/// and it signs through useKey. Through the real handlers.
final class KeyGenerationRequestTests: XCTestCase {
    private var d: InProcessDaemon!

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop() }

    func generate(_ query: Attributes, secrets: [SecureBytes] = []) throws -> Response {
        var q = query
        q["r_Attributes"] = true
        q["r_PersistentRef"] = true
        return try d.call(Request(.add, query: q, options: ["generate": "private"], secrets: secrets))
    }

    func testTheDaemonMakesAndStoresTheKey() throws {
        let r = try generate(["class": "keys", "kcls": .number(1), "type": .number(73), "bsiz": .number(384),
                              "atag": .data(Array("made-here".utf8)), "extr": .bool(true)])
        XCTAssertEqual(r.status, .success)
        guard case .value(.item(let item)) = r.result, let ref = item.persistentRef,
              case .data(let pub)? = item.attributes["pubk"] else { return XCTFail("no item: \(r.result)") }
        XCTAssertEqual(pub.count, Curve.p384.publicLength, "a P-384 point")
        XCTAssertEqual(item.attributes["klbl"], .data(DigestAlgorithm.sha1.hash(pub)), "Apple's application label of the key made")
        XCTAssertEqual(item.attributes["bsiz"]?.numberValue, 384)
        // The stored bytes are a private key whose public half is pubk.
        let read = try d.call(Request(.copyMatching, query: ["v_PersistentRef": .data(ref), "r_Data": true]))
        guard case .value(.data(let secret)) = read.result else { return XCTFail("no bytes: \(read.status)") }
        let key = try secret.withUnsafeBytes { try AsymmetricKey.apple(type: 73, isPrivate: true, $0) }
        XCTAssertEqual(key.publicBytes(), pub)
        // It signs in the daemon, and pubk verifies.
        let message = Array("generated in the daemon".utf8)
        let signed = try d.call(Request(.useKey, query: ["v_PersistentRef": .data(ref)],
                                        options: ["use": "sign", "algorithm": "algid:sign:ECDSA:message-X962:SHA384"],
                                        secrets: [try SecureBytes(copying: message)]))
        guard case .value(.data(let signature)) = signed.result else { return XCTFail("no signature: \(signed.status)") }
        let verifier = try pub.withUnsafeBytes { try AsymmetricKey.apple(type: 73, isPrivate: false, $0) }
        XCTAssertTrue(try verifier.verify(signature: signature.withUnsafeBytes { Array($0) },
                                          digest: DigestAlgorithm.sha384.hash(message), hash: .sha384, scheme: .ecdsaX962))
    }

    func testRSAKeysAreMadeOfTheSizeAsked() throws {
        let r = try generate(["class": "keys", "kcls": .number(1), "type": .number(42), "bsiz": .number(2048)])
        XCTAssertEqual(r.status, .success)
        guard case .value(.item(let item)) = r.result, case .data(let pub)? = item.attributes["pubk"] else {
            return XCTFail("no item: \(r.result)")
        }
        XCTAssertEqual(try pub.withUnsafeBytes { try AsymmetricKey.apple(type: 42, isPrivate: false, $0) }.sizeInBits, 2048)
    }

    func testGenerationIsOnlyOfPrivateKeysOfKnownKinds() throws {
        let ok: Attributes = ["class": "keys", "kcls": .number(1), "type": .number(73)]
        XCTAssertEqual(try generate(ok, secrets: [try SecureBytes(copying: [1, 2, 3])]).status, .param, "with bytes of its own")
        XCTAssertEqual(try generate(ok.merging(["kcls": .number(0)]) { $1 }).status, .param, "a public key")
        XCTAssertEqual(try generate(ok.merging(["bsiz": .number(255)]) { $1 }).status, .param, "no such curve")
        XCTAssertEqual(try generate(["class": "keys", "kcls": .number(1), "type": .number(42), "bsiz": .number(1001)]).status, .param)
        XCTAssertEqual(try generate(["class": "keys", "kcls": .number(1), "type": .number(17)]).status, .param, "no such type")
        XCTAssertEqual(try generate(["class": "genp", "svce": "s", "kcls": .number(1)]).status, .param, "not a key item")
        XCTAssertEqual(try generate(ok.merging(["agrp": "no-such-group"]) { $1 }).status, .missingEntitlement,
                       "no key is made for a group the caller may not write")
    }

    func testACallerWithoutAWritableGroupGetsNoKeyMade() throws {
        let r = try d.call(Request(.add, query: ["class": "keys", "kcls": .number(1), "type": .number(42), "bsiz": .number(4096)],
                                   options: ["generate": "private"]), as: InProcessDaemon.outsider)
        XCTAssertEqual(r.status, .missingEntitlement)
    }
}
