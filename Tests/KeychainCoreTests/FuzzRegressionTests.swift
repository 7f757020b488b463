import Foundation
import KeychainCore
import KeychainCrypto
import SQLiteStore
import XCTest

/// The fuzz targets' decoders (docs/fuzzing.md) fed the checked-in seed corpus and hostile
/// inputs: each must succeed or fail with its documented error, never trap.
final class FuzzRegressionTests: XCTestCase {
    /// Fuzz/Corpus/<target>, as (file name, bytes), sorted by name.
    static func corpus(_ target: String) throws -> [(String, [UInt8])] {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Fuzz/Corpus/\(target)").standardized.path
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        return try names.map { ($0, Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/" + $0)))) }
    }

    // MARK: Queries as the daemon receives them (FuzzQuery)

    /// What the FuzzQuery target does with one input: operation byte, attribute record, parse.
    func parseWireQuery(_ bytes: [UInt8]) throws -> ParsedQuery {
        let operations = ParsedQuery.Operation.allCases
        let operation = operations[Int(bytes.first ?? 0) % operations.count]
        let query = try decodeRecord(Array(bytes.dropFirst()))
        return try ParsedQuery(query, operation: operation)
    }

    func decodeRecord(_ bytes: [UInt8]) throws -> Attributes {
        try bytes.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            return try AttributeCoding.read(from: &r)
        }
    }

    func testQueryCorpusParsesOrFailsWithItsDocumentedStatus() throws {
        let files = try Self.corpus("FuzzQuery")
        XCTAssertGreaterThanOrEqual(files.count, 4)
        for (name, bytes) in files {
            if name.hasPrefix("valid-") {
                XCTAssertNoThrow(try parseWireQuery(bytes), name)
            } else {
                XCTAssertThrowsError(try parseWireQuery(bytes), name) { error in
                    XCTAssertEqual(error as? KeychainStatus, .noSuchClass, name)
                }
            }
        }
    }

    func testMalformedAttributeRecordsAreDecodeErrors() throws {
        let hostile: [(String, [UInt8])] = [
            ("empty", []),
            ("count without entries", [0xff, 0xff]),
            ("name longer than the input", [0, 1, 255, 0x61, 0x62]),
            ("type tag 0", [0, 1, 4] + Array("svce".utf8) + [0]),
            ("type tag 6", [0, 1, 4] + Array("svce".utf8) + [6, 0, 0, 0, 0]),
            ("type tag 255", [0, 1, 4] + Array("svce".utf8) + [255]),
            ("string of 4 GiB", [0, 1, 4] + Array("svce".utf8) + [1, 0xff, 0xff, 0xff, 0xff, 0x61]),
            ("data cut short", [0, 1, 4] + Array("acct".utf8) + [2, 0, 0, 0, 9, 1, 2]),
            ("number cut short", [0, 1, 4] + Array("port".utf8) + [3, 0, 0, 1]),
            ("second entry missing", [0, 2, 4] + Array("r_Da".utf8) + [4, 1]),
        ]
        for (what, bytes) in hostile {
            assertStatus(.decode, try decodeRecord(bytes), what)
            assertStatus(.decode, try parseWireQuery([0] + bytes), what)
        }
    }

    func testHostileQueriesGiveTheStatusACallerSees() throws {
        let ref = Array("genp".utf8) + [UInt8](repeating: 7, count: 16)
        let cases: [(KeychainStatus, ParsedQuery.Operation, Attributes)] = [
            (.param, .search, ["svce": "db"]),                                  // no class
            (.param, .search, ["class": 1]),                                    // class not a string
            (.noSuchClass, .search, ["class": "kSecClassNothing"]),
            (.noSuchAttr, .search, ["class": "genp", "srvr": "example.com"]),   // inet's attribute
            (.param, .update, ["class": "genp", "r_Data": true]),               // return key in update
            (.param, .update, ["class": "genp", "m_Limit": "m_LimitAll"]),      // limit in update
            (.param, .search, ["class": "genp", "m_Limit": 0]),
            (.param, .search, ["class": "genp", "m_Limit": .number(Int64.min)]),
            (.param, .search, ["class": "genp", "m_Limit": "m_LimitSome"]),
            (.param, .search, ["class": "genp", "r_Data": "yes"]),
            (.param, .search, ["class": "genp", "r_Everything": true]),
            (.param, .search, ["class": "genp", "v_Ref": true]),
            (.param, .search, ["class": "genp", "r_Ref": true]),                // passwords have no object
            (.param, .delete, ["v_PersistentRef": .data(Array(ref.prefix(19)))]),
            (.param, .delete, ["v_PersistentRef": .data(Array("nope".utf8) + ref.suffix(16))]),
            (.param, .delete, ["v_PersistentRef": .string("genp")]),
            (.param, .search, ["class": "genp", "sync": "sometimes"]),
            (.param, .search, ["class": "genp", "pdmn": "never"]),
            (.param, .search, ["class": "keys", "sdat": "yesterday"]),
            (.param, .search, ["class": "genp", "agrp": 5]),
        ]
        for (status, operation, query) in cases {
            assertStatus(status, try ParsedQuery(query, operation: operation), "\(query)")
        }

        // The same statuses come back from a vault, before any item is looked at.
        let scratch = try Scratch()
        let vault = try scratch.makeVault()
        XCTAssertStatus(.noSuchClass, try vault.copyMatching(["class": "kSecClassNothing"], accessGroups: groups))
        XCTAssertStatus(.param, try vault.copyMatching(["class": "genp", "m_Limit": 0], accessGroups: groups))
        XCTAssertStatus(.noSuchAttr, try vault.delete(["class": "genp", "srvr": "x"], accessGroups: groups))
    }

    // MARK: Vault header (FuzzVaultHeader)

    func testHeaderCorpusParsesAndEncodesBackToTheSameBytes() throws {
        let files = try Self.corpus("FuzzVaultHeader")
        XCTAssertTrue(files.contains { $0.0 == "valid-fixture-v1" })
        for (name, bytes) in files {
            let header = try VaultHeader.parse(bytes)
            XCTAssertEqual(header.encoded(), bytes, name)
        }
    }

    func testHostileHeadersAreRefusedWithTheirParseError() throws {
        let valid = try XCTUnwrap(Self.corpus("FuzzVaultHeader").first { $0.0 == "valid-keys" }?.1)
        func changed(_ offset: Int, _ bytes: [UInt8]) -> [UInt8] {
            var h = valid
            h.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            return h
        }
        // Layout: magic 0-7, format 8-9, flags 10-11, kdf 12, ops 13-20, mem 21-28,
        // salt/vault/device IDs 29-76, key count 77, first key at 78 (slot, wrapper, u16 length).
        let cases: [(VaultHeader.ParseError, String, [UInt8])] = [
            (.notAVault, "wrong magic", changed(0, Array("SQLITE".utf8))),
            (.newerFormat(2), "format 2", changed(8, [0, 2])),
            (.newerFormat(0xffff), "format 65535", changed(8, [0xff, 0xff])),
            (.malformed, "format 0", changed(8, [0, 0])),
            (.malformed, "unknown flag", changed(10, [0, 2])),
            (.malformed, "unknown KDF", changed(12, [2])),
            (.malformed, "zero passes", changed(13, [UInt8](repeating: 0, count: 8))),
            (.malformed, "64 GiB of KDF memory", changed(21, [0, 0, 0, 0x10, 0, 0, 0, 0])),
            (.malformed, "more keys than present", changed(77, [255])),
            (.malformed, "slot 9", changed(78, [9])),
            (.malformed, "wrapper 4", changed(79, [4])),
            (.malformed, "box too short", changed(80, [0, 8])),
            (.malformed, "box longer than the input", changed(80, [0xff, 0xff])),
            (.malformed, "duplicate entry", changed(78 + 4 + 72, [1, 1])),
            (.malformed, "trailing byte", valid + [0]),
            (.malformed, "empty", []),
        ]
        for (error, what, bytes) in cases {
            XCTAssertThrowsError(try VaultHeader.parse(bytes), what) { XCTAssertEqual($0 as? VaultHeader.ParseError, error, what) }
        }
        for length in 0..<valid.count {
            XCTAssertThrowsError(try VaultHeader.parse(Array(valid.prefix(length))), "cut at \(length)") {
                XCTAssertTrue($0 is VaultHeader.ParseError, "cut at \(length): \($0)")
            }
        }
    }

    /// What a user sees for such a header: the vault refuses to open with a clear error.
    func testVaultWithAHostileHeaderRefusesToOpen() throws {
        let scratch = try Scratch()
        let path = try scratch.makeVault().path
        let db = try Connection(path: path, create: false)
        let good = try XCTUnwrap(db.prepare("SELECT value FROM meta WHERE key = 'header'").blobRow())
        func open(withHeader header: [UInt8]) throws -> Vault {
            try db.prepare("UPDATE meta SET value = ? WHERE key = 'header'").bind(.blob(header)).run()
            return try Vault.open(at: path, deviceKey: try scratch.deviceKey())
        }
        XCTAssertThrowsError(try open(withHeader: Array("SQLite format 3".utf8))) {
            XCTAssertEqual($0 as? VaultFileError, .corruptHeader)
        }
        XCTAssertThrowsError(try open(withHeader: Array(good.prefix(40)))) {
            XCTAssertEqual($0 as? VaultFileError, .corruptHeader)
        }
        XCTAssertThrowsError(try open(withHeader: Array(good.prefix(8)) + [0, 9] + Array(good.dropFirst(10)))) {
            XCTAssertEqual($0 as? VaultFileError, .newerFormat(found: 9, supported: 1))
            XCTAssertEqual(($0 as? VaultFileError)?.status, .invalidKeychain)
        }
        XCTAssertNoThrow(try open(withHeader: good))
    }

    // MARK: File names (FuzzFileNames)

    func testFileNameCorpusRoundTripsBothWays() throws {
        for (name, bytes) in try Self.corpus("FuzzFileNames") {
            for topLevel in [false, true] {
                let escaped = FileNames.escape(bytes, topLevel: topLevel)
                XCTAssertLessThanOrEqual(escaped.count, FileNames.maximumLength, name)
                XCTAssertFalse(escaped.contains(UInt8(ascii: "/")) || escaped.contains(0), name)
                if escaped.starts(with: Array("%H".utf8)) {
                    XCTAssertEqual(escaped.count, 34, name)
                    XCTAssertNil(FileNames.unescape(escaped, topLevel: topLevel), name)
                } else {
                    XCTAssertEqual(FileNames.unescape(escaped, topLevel: topLevel), bytes, name)
                }
                if let value = FileNames.unescape(bytes, topLevel: topLevel) {
                    XCTAssertEqual(FileNames.escape(value, topLevel: topLevel), bytes, name)
                }
            }
        }
        XCTAssertEqual(FileNames.unescape(Array("%2Econfig%25%2F".utf8), topLevel: true), Array(".config%/".utf8))
        XCTAssertEqual(FileNames.escape(Array("..".utf8)), Array("%2E.".utf8))
    }

    func testNonCanonicalAndMalformedNamesStandForNoValue() {
        let names = ["%", "%2", "%zz", "%2e", "%41", "%%", "a/b", "a%00", ".", "..", "%H", "%H00",
                     String(repeating: "x", count: 256)].map { Array($0.utf8) }
        for name in names where name != [UInt8(ascii: "%")] && name != Array("a%00".utf8) {
            XCTAssertNil(FileNames.unescape(name), String(decoding: name, as: UTF8.self))
        }
        XCTAssertEqual(FileNames.unescape(Array("%".utf8)), [])               // the empty value
        XCTAssertEqual(FileNames.unescape(Array("a%00".utf8)), [0x61, 0])    // NUL, escaped
        XCTAssertNil(FileNames.unescape(Array(".config".utf8), topLevel: true))  // must be %2Econfig
        XCTAssertEqual(FileNames.unescape(Array(".config".utf8)), Array(".config".utf8))
    }
}

/// Asserts that `body` throws exactly `status`; `what` names the case in a failure.
private func assertStatus<T>(_ status: KeychainStatus, _ body: @autoclosure () throws -> T, _ what: String,
                             file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertThrowsError(try body(), what, file: file, line: line) { error in
        XCTAssertEqual(error as? KeychainStatus, status, "\(what): got \(error)", file: file, line: line)
    }
}

private extension Statement {
    /// The first column of the first row as a blob.
    func blobRow() throws -> [UInt8]? { try step() ? blob(0) : nil }
}
