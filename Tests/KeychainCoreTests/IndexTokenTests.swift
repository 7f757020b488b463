@testable import KeychainCore
import KeychainCrypto
import KeychainModel
import XCTest

/// The blind tokens are part of the vault format (docs/vault-format.md, "Tokens"): every stored
/// row was written with them, and a search finds a row only if it computes the same bytes. Each
/// token here is checked against its documented layout, built byte by byte and hashed whole.
final class IndexTokenTests: XCTestCase {
    let key = try! SecureBytes(copying: (0..<32).map { UInt8($0) })

    func hash(_ layout: [UInt8], _ length: Int) -> [UInt8] { KeyedHash.hash(layout, key: key, length: length) }

    func lengthPrefixed(_ bytes: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.lengthPrefixed(bytes)
        return w.bytes
    }

    func number(_ n: Int64) -> [UInt8] {
        var w = ByteWriter()
        w.u64(UInt64(bitPattern: n))
        return w.bytes
    }

    func testGroupToken() {
        XCTAssertEqual(IndexToken.group("app.shared", key: key), hash(Array("agrpapp.shared".utf8), 16))
        XCTAssertEqual(IndexToken.group("", key: key), hash(Array("agrp".utf8), 16))
    }

    func testAttributeTokenOfEachKindOfValue() {
        func layout(_ name: String, _ canonical: [UInt8], cls: UInt8 = 1) -> [UInt8] {
            Array("attr".utf8) + [cls] + lengthPrefixed(Array(name.utf8)) + canonical
        }
        XCTAssertEqual(IndexToken.attribute(.account, .string("alice"), itemClass: .genericPassword, key: key),
                       hash(layout("acct", [0x62] + Array("alice".utf8)), 16))
        XCTAssertEqual(IndexToken.attribute(.account, .data(Array("alice".utf8)), itemClass: .genericPassword, key: key),
                       hash(layout("acct", [0x62] + Array("alice".utf8)), 16), "a string and its bytes")
        XCTAssertEqual(IndexToken.attribute(.port, .number(5432), itemClass: .internetPassword, key: key),
                       hash(layout("port", [0x6E] + number(5432), cls: 2), 16))
        XCTAssertEqual(IndexToken.attribute(.port, .bool(true), itemClass: .internetPassword, key: key),
                       hash(layout("port", [0x6E] + number(1), cls: 2), 16))
        let t = 7.25
        var date = ByteWriter()
        date.u64(t.bitPattern)
        XCTAssertEqual(IndexToken.attribute(.startDate, .date(t), itemClass: .key, key: key),
                       hash(layout("sdat", [0x74] + date.bytes, cls: 4), 16))
        XCTAssertEqual(IndexToken.attribute(.account, .data([]), itemClass: .genericPassword, key: key),
                       hash(layout("acct", [0x62]), 16), "the empty value of a missing attribute")
    }

    /// The example of docs/vault-format.md, then a missing attribute and `sync` 1.
    func testPrimaryKeyToken() {
        func entry(_ name: String, _ canonical: [UInt8]) -> [UInt8] { lengthPrefixed(Array(name.utf8)) + lengthPrefixed(canonical) }
        let expected = hash(Array("pkey".utf8) + [1] + entry("acct", [0x62] + Array("app".utf8)) + entry("svce", [0x62] + Array("db".utf8))
                            + entry("agrp", [0x62] + Array("g".utf8)) + entry("sync", [0x6E] + number(0)), 32)
        let attributes: Attributes = [.account: "app", .service: "db", .accessGroup: "g", .synchronizable: .number(0),
                                      .label: "not in the key"]
        XCTAssertEqual(IndexToken.primaryKey(attributes, itemClass: .genericPassword, key: key), expected)
        XCTAssertEqual(IndexToken.primaryKey([.account: .data(Array("app".utf8)), .service: "db", .accessGroup: "g",
                                              .synchronizable: .bool(false)], itemClass: .genericPassword, key: key), expected)
        let synced = hash(Array("pkey".utf8) + [1] + entry("acct", [0x62]) + entry("svce", [0x62] + Array("db".utf8))
                          + entry("agrp", [0x62] + Array("g".utf8)) + entry("sync", [0x6E] + number(1)), 32)
        XCTAssertEqual(IndexToken.primaryKey([.service: "db", .accessGroup: "g", .synchronizable: .number(1)],
                                             itemClass: .genericPassword, key: key), synced, "acct missing")
    }

    func testSecretAttributeToken() {
        XCTAssertEqual(IndexToken.secretAttribute("service", "db", key: key),
                       hash(Array("ssat".utf8) + lengthPrefixed(Array("service".utf8)) + lengthPrefixed(Array("db".utf8)), 16))
    }

    /// Fixed values, so that a change of layout shows even if the layouts above change with it.
    func testPinnedValues() {
        let attributes: Attributes = [.account: "app", .service: "db", .accessGroup: "g", .synchronizable: .number(0)]
        XCTAssertEqual(Hex.encode(IndexToken.primaryKey(attributes, itemClass: .genericPassword, key: key)), Self.pinnedPrimaryKey)
        XCTAssertEqual(Hex.encode(IndexToken.group("g", key: key)), Self.pinnedGroup)
        XCTAssertEqual(Hex.encode(IndexToken.attribute(.account, "app", itemClass: .genericPassword, key: key)), Self.pinnedAttribute)
    }

    static let pinnedPrimaryKey = "5e5f26447c85a40f67d580cc6ab653d3e8f095bd822d58984fa3b3cc2506d66d"
    static let pinnedGroup = "4126d4f12f217d6d60ecf8cbc89dfae5"
    static let pinnedAttribute = "cbadf3571773b1bc0e1161eeee501fe2"
}
