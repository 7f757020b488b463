@testable import KeychainCore
import KeychainCrypto
import XCTest

/// Private keys and certificates as files (`/.keys/<label>.pem`, `/.certificates/<label>.pem`):
/// one name per label, the identifying hash for an item without one, no file for a public or
/// non-extractable key, found and listed through the file API (no root, no FUSE).
final class KeyCertificateFileTests: XCTestCase {
    var scratch: Scratch!
    var vault: Vault!

    override func setUpWithError() throws {
        scratch = try Scratch()
        vault = try scratch.makeVault()
    }

    override func tearDown() {
        vault = nil
        scratch = nil
    }

    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func testNamesAreTheLabelWithPemAndRoundTrip() {
        let cases: [(ItemName, String)] = [
            (ItemName(flat: .key, label: bytes("server")), "server.pem"),
            (ItemName(flat: .certificate, label: bytes("a/b%c")), "a%2Fb%25c.pem"),
            (ItemName(flat: .key, label: bytes("..")), "%2E..pem"),
            (ItemName(flat: .key, label: bytes(".hidden")), ".hidden.pem"),
            (ItemName(flat: .key, label: [], qualifiers: ["klbl": .data([0xAB, 0x01])]), "%%~klbl=AB01.pem"),
            (ItemName(flat: .certificate, label: [], qualifiers: ["slnr": .data([0x00, 0x8B])]), "%%~slnr=008B.pem"),
        ]
        // One that shares its label with one listed before it also carries its qualifier.
        var second = ItemName(flat: .key, label: bytes("tls"))
        second.qualifiers = ["klbl": .data([0x02])]
        var secondCert = ItemName(flat: .certificate, label: bytes("a%"))
        secondCert.qualifiers = ["slnr": .data([0x09])]
        for (name, file) in cases + [(second, "tls%~klbl=02.pem"), (secondCert, "a%25%~slnr=09.pem")] {
            XCTAssertEqual(String(decoding: FileNames.fileName(of: name), as: UTF8.self), file)
            XCTAssertEqual(FileNames.itemName(bytes(file), service: [], itemClass: name.itemClass), name, file)
        }
        XCTAssertEqual(ItemName(flat: .key, label: bytes("x"), qualifiers: ["klbl": .data([1])]).qualifiers, [:],
                       "a labelled item is named by its label alone")
        for bad in ["server", ".pem", "%%~klbl=ab01.pem", "%%~klbl=.pem", "%%~slnr=AB.pem", "%61.pem", "%.pem",
                    "tls%~klbl=.pem", "tls%~klbl=0g.pem", "tls%~slnr=01.pem", "tls%~klbl=01%~klbl=02.pem"] {
            XCTAssertNil(FileNames.itemName(bytes(bad), service: [], itemClass: .key), bad)
        }
        let long = ItemName(flat: .key, label: Array(repeating: UInt8(ascii: "k"), count: 300))
        XCTAssertTrue(LongNameForm.isHashed(FileNames.fileName(of: long)), "a long name is hashed, as elsewhere")
        XCTAssertEqual(FileNames.classDirectory(.key), bytes(".keys"))
        XCTAssertEqual(FileNames.classDirectory(.certificate), bytes(".certificates"))
    }

    func testOnlyExtractablePrivateKeysHaveFilesAndRepeatedLabelsAreFoundByTheirQualifier() throws {
        func addKey(_ label: String?, klbl: UInt8, _ extra: Attributes = [:]) throws {
            var attrs: Attributes = ["class": "keys", "kcls": 1, "type": 73, "klbl": .data([klbl]), "extr": true]
            if let label { attrs["labl"] = .string(label) }
            attrs.merge(extra) { $1 }
            try vault.add(attrs, secret: secret("key \(klbl)"), accessGroups: groups)
        }
        try addKey("tls", klbl: 1)
        try addKey("tls", klbl: 2)
        try addKey("locked-in", klbl: 3, ["extr": false])
        try addKey("public", klbl: 4, ["kcls": 0])
        try addKey(nil, klbl: 5)
        try vault.add(["class": "cert", "ctyp": 3, "issr": .data([1]), "slnr": .data([9]), "labl": "tls"],
                      secret: secret("der"), accessGroups: groups)

        let names = try vault.fileEntries(itemClass: .key, accessGroups: groups).map { String(decoding: FileNames.fileName(of: $0.name), as: UTF8.self) }
        XCTAssertEqual(names, ["tls.pem", "tls.pem", "%%~klbl=05.pem"], "no file for a non-extractable or public key")
        let tls = try vault.fileEntries(named: ItemName(flat: .key, label: bytes("tls")), accessGroups: groups)
        XCTAssertEqual(tls.count, 2)
        XCTAssertEqual(try vault.fileSecret(of: tls[0], accessGroups: groups).string, "key 1", "the first by insertion order")
        var second = ItemName(flat: .key, label: bytes("tls"))
        second.qualifiers = ["klbl": .data([2])]
        let tls2 = try vault.fileEntries(named: second, accessGroups: groups)
        XCTAssertEqual(try tls2.map { try vault.fileSecret(of: $0, accessGroups: groups).string }, ["key 2"], "the label and its klbl")
        second.qualifiers = ["klbl": .data([5])]
        XCTAssertTrue(try vault.fileEntries(named: second, accessGroups: groups).isEmpty, "a klbl of another label")
        XCTAssertTrue(try vault.fileEntries(named: ItemName(flat: .key, label: bytes("locked-in")), accessGroups: groups).isEmpty)
        let bare = try vault.fileEntries(named: ItemName(flat: .key, label: [], qualifiers: ["klbl": .data([5])]), accessGroups: groups)
        XCTAssertEqual(bare.count, 1)
        let cert = try vault.fileEntries(named: ItemName(flat: .certificate, label: bytes("tls")), accessGroups: groups)
        XCTAssertEqual(cert.first.map { try? vault.fileSecret(of: $0, accessGroups: groups).string }, "der")
        XCTAssertTrue(try vault.fileEntries(named: ItemName(flat: .key, label: bytes("tls")), accessGroups: ["elsewhere"]).isEmpty,
                      "the caller's groups apply")
    }
}

/// The hashed long-name form (`%H` and 32 upper-case hex digits).
enum LongNameForm {
    static func isHashed(_ name: [UInt8]) -> Bool {
        name.count == 34 && name.starts(with: Array("%H".utf8))
    }
}
