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

    /// Keys are equal exactly when their names are as `String`s, and equal keys hash alike, also
    /// for names a short plain name is canonically equivalent to (U+212A KELVIN SIGN is `K`).
    func testKeysAreEqualAndHashAsTheirNames() {
        let names = ["acct", "svce", "r_Data", "m_Limit", "r_PersistentRef", "K", "\u{212A}", "aK", "a\u{212A}", "a;", "a\u{037E}",
                     "`b", "\u{1FEF}b", "", "a\0", "a", "é", "e\u{0301}", "abcdefgh", "abcdefghi", "pdmn"]
        for x in names {
            for y in names {
                let a = AttributeKey(rawValue: x), b = AttributeKey(rawValue: y)
                XCTAssertEqual(a == b, x == y, "\(x.unicodeScalars.map(\.value)) and \(y.unicodeScalars.map(\.value))")
                if a == b { XCTAssertEqual(a.hashValue, b.hashValue) }
            }
        }
        let table: Attributes = [AttributeKey(rawValue: "\u{212A}"): "kelvin", "acct": "a"]
        XCTAssertEqual(table["K"], "kelvin")
        XCTAssertEqual(table[.account], "a")
        XCTAssertEqual(Set(names.map(AttributeKey.init(rawValue:))).count, Set(names).count)
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

    /// Names that share their first eight bytes, names that are prefixes of others, non-ASCII
    /// names, and enough of them for the library's sort (over 16): written in their bytes' order.
    func testAttributeCodingOrdersNamesByTheirBytes() throws {
        var names = ["labelled_", "label", "labelled", "labelled_b", "labelled_a", "a", "é", "z", "", "labelle"]
        names += (0..<12).map { "n\($0 % 3)\($0)" }
        for count in [names.count, 5] {
            let chosen = Array(names.prefix(count))
            var fields = Fields()
            for (i, n) in chosen.enumerated() { fields[n] = .number(Int64(i)) }
            var w = ByteWriter()
            AttributeCoding.write(fields, into: &w)
            var written: [[UInt8]] = []
            try w.bytes.withUnsafeBytes { buf in
                var r = ByteReader(buf)
                for _ in 0..<Int(try r.u16()) {
                    written.append(Array(try r.view(Int(try r.u8()))))
                    _ = try r.u8()
                    _ = try r.u64()
                }
            }
            let expected = Set(chosen.map { Array($0.utf8) }).sorted { $0.lexicographicallyPrecedes($1) }
            XCTAssertEqual(written, expected, "\(count) names")
        }
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
