import KeychainModel
import XCTest

/// The key table's names are what vaults, backups and the socket hold: the bytes written for
/// a dictionary, the primary key's order (part of every lookup token) and the change words
/// that watchers and on_change commands read must not move.
final class AttributeKeyTests: XCTestCase {
    func testARawNameAndItsConstantAreOneKey() {
        let literal: AttributeKey = "svce"
        XCTAssertEqual(literal, .service)
        XCTAssertEqual(AttributeKey(rawValue: "m_Limit"), .matchLimit)
        XCTAssertEqual(AttributeKey.keyType, .type, "kSecAttrKeyType and kSecAttrType share \"type\"")
        XCTAssertEqual(([.synchronizable, .account, .service] as [AttributeKey]).sorted(), [.account, .service, .synchronizable],
                       "keys sort as their raw names")
    }

    func testAttributeCodingWritesRawNamesInTheirOrder() throws {
        let attributes: Attributes = [.synchronizable: .number(1), .service: "db", .account: .data([0x61])]
        var w = ByteWriter()
        AttributeCoding.write(attributes, into: &w)
        let expected: [UInt8] = [0, 3]
            + [4] + Array("acct".utf8) + [2, 0, 0, 0, 1, 0x61]
            + [4] + Array("svce".utf8) + [1, 0, 0, 0, 2] + Array("db".utf8)
            + [4] + Array("sync".utf8) + [3, 0, 0, 0, 0, 0, 0, 0, 1]
        XCTAssertEqual(w.bytes, expected)
        XCTAssertEqual(AttributeCoding.encodedSize(attributes), expected.count)
        try expected.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            XCTAssertEqual(try AttributeCoding.read(from: &r), attributes)
            // Fields (options, info, group records) are the same encoding under String names.
            var f = ByteReader(buf)
            XCTAssertEqual(try AttributeCoding.readFields(from: &f), attributes.fields)
        }
        var fw = ByteWriter()
        AttributeCoding.write(attributes.fields, into: &fw)
        XCTAssertEqual(fw.bytes, expected)
    }

    func testPrimaryKeysKeepTheirOrder() {
        XCTAssertEqual(ItemClass.genericPassword.primaryKey.map(\.rawValue), ["acct", "svce"])
        XCTAssertEqual(ItemClass.internetPassword.primaryKey.map(\.rawValue), ["acct", "sdmn", "srvr", "ptcl", "atyp", "port", "path"])
        XCTAssertEqual(ItemClass.certificate.primaryKey.map(\.rawValue), ["ctyp", "issr", "slnr"])
        XCTAssertEqual(ItemClass.key.primaryKey.map(\.rawValue), ["kcls", "klbl", "atag", "crtr", "type", "bsiz", "esiz", "sdat", "edat"])
    }

    func testSpecialValuesAndChangeWords() {
        XCTAssertEqual(AttributeValue.synchronizableAny, "syna")
        XCTAssertEqual(AttributeValue.matchLimitOne, "m_LimitOne")
        XCTAssertEqual(AttributeValue.matchLimitAll, "m_LimitAll")
        XCTAssertEqual(AttributeValue.itemClass(.key), "keys")
        XCTAssertEqual(AttributeValue.protection(.afterFirstUnlockThisDeviceOnly), "cku")
        XCTAssertEqual(ValueName.identityClass, "idnt")
        XCTAssertEqual([ChangeKind.add, .update, .delete, .lock, .unlock].map(\.rawValue), ["add", "update", "delete", "lock", "unlock"])
    }
}
