import KeychainCore
import KeychainCrypto
import KeychainKeys
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// Key items stored before the daemon derived their public key (`pubk`): written straight into
/// the vault, as an older daemon left them, they get it at their first search that returns their
/// attributes and reference (what `kSecReturnRef` asks), and keep it. Through the real handlers.
final class PublicKeyOnFirstUseTests: XCTestCase {
    private var d: InProcessDaemon!

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop() }

    /// The owner's access group, as the daemon files an add without one.
    func ownersGroup() throws -> String {
        let r = try d.call(Request(.add, query: ["class": "genp", "svce": .string("group-probe-\(UUID())"), "r_Attributes": true]))
        guard case .value(.item(let item)) = r.result, let group = item.attributes["agrp"]?.stringValue else {
            throw KeychainStatus.decode
        }
        return group
    }

    /// Stores a key item without `pubk`, as a daemon before it did.
    func storeOld(_ attributes: Attributes, bytes: SecureBytes) throws {
        var query = attributes
        query["class"] = "keys"
        query["agrp"] = .string(try ownersGroup())
        _ = try d.daemon.vault.add(query, secret: bytes, accessGroups: [query["agrp"]!.stringValue!])
    }

    func find(_ tag: String) throws -> (Response, FoundItem?) {
        let r = try d.call(Request(.copyMatching, query: ["class": "keys", "atag": .data(Array(tag.utf8)),
                                                          "r_Attributes": true, "r_PersistentRef": true]))
        guard case .value(.item(let item)) = r.result else { return (r, nil) }
        return (r, item)
    }

    /// `pubk` as the vault holds it now, read past the daemon.
    func storedPublicKey(_ tag: String) throws -> AttributeValue? {
        let group = try ownersGroup()
        let r = try d.daemon.vault.copyMatching(["class": "keys", "atag": .data(Array(tag.utf8)), "r_Attributes": true], accessGroups: [group])
        guard case .value(.item(let item)) = r else { return nil }
        return item.attributes["pubk"]
    }

    func testAnOldPrivateKeyGetsItsPublicKeyAtItsFirstSearch() throws {
        let key = try AsymmetricKey.generate(.p256)
        // Not extractable: its bytes are read in the daemon only, as a use reads them.
        try storeOld(["kcls": .number(1), "type": .number(73), "atag": .data(Array("old-private".utf8)), "extr": .bool(false),
                      "klbl": .data(DigestAlgorithm.sha1.hash(key.publicBytes()))], bytes: try key.privateBytes())
        XCTAssertNil(try storedPublicKey("old-private"), "stored as an older daemon left it")
        let (r, item) = try find("old-private")
        XCTAssertEqual(r.status, .success)
        XCTAssertEqual(item?.attributes["pubk"], .data(key.publicBytes()), "the first search returns it")
        XCTAssertEqual(try storedPublicKey("old-private"), .data(key.publicBytes()), "and it is kept")
        XCTAssertEqual(try find("old-private").1?.attributes["pubk"], .data(key.publicBytes()))
        let read = try d.call(Request(.copyMatching, query: ["class": "keys", "atag": .data(Array("old-private".utf8)), "r_Data": true]))
        XCTAssertEqual(read.status, .dataNotAvailable, "the bytes stay in")
    }

    func testAnOldPublicKeyGetsItToo() throws {
        let key = try AsymmetricKey.generate(.p384)
        try storeOld(["kcls": .number(0), "type": .number(73), "atag": .data(Array("old-public".utf8))],
                     bytes: try SecureBytes(copying: key.publicBytes()))
        XCTAssertEqual(try find("old-public").1?.attributes["pubk"], .data(key.publicBytes()))
        XCTAssertEqual(try storedPublicKey("old-public"), .data(key.publicBytes()))
    }

    func testBytesThatAreNotAKeyAreLeftAlone() throws {
        try storeOld(["kcls": .number(1), "type": .number(73), "atag": .data(Array("not-a-key".utf8))],
                     bytes: try SecureBytes(copying: [1, 2, 3]))
        let (r, item) = try find("not-a-key")
        XCTAssertEqual(r.status, .success)
        XCTAssertNotNil(item)
        XCTAssertNil(item?.attributes["pubk"])
        XCTAssertNil(try storedPublicKey("not-a-key"))
    }
}
