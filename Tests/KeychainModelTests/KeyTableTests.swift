import Foundation
import KeychainCrypto
import KeychainModel
import XCTest

/// The key table as a whole: Security's `kSec*` constants are built from these raw names, so two
/// constants with one raw name would make two of Apple's keys one attribute in every vault.
final class KeyTableTests: XCTestCase {
    /// `static let NAME = AttributeKey(rawValue: "RAW")` of Sources/KeychainModel/AttributeKey.swift.
    func tableEntries() throws -> [(name: String, raw: String)] {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/KeychainModel/AttributeKey.swift")
        let text = try String(contentsOf: source, encoding: .utf8)
        var entries: [(String, String)] = []
        for line in text.split(separator: "\n") {
            guard let letRange = line.range(of: "static let "), let call = line.range(of: " = AttributeKey(rawValue: \"") else { continue }
            let name = String(line[letRange.upperBound..<call.lowerBound]).replacingOccurrences(of: "`", with: "")
            let raw = String(line[call.upperBound...].prefix { $0 != "\"" })
            entries.append((name, raw))
        }
        return entries
    }

    func testEveryConstantHasItsOwnRawName() throws {
        let entries = try tableEntries()
        XCTAssertGreaterThan(entries.count, 80, "the table was read")
        var seen: [String: String] = [:]
        for (name, raw) in entries {
            XCTAssertFalse(raw.isEmpty, "\(name) has a raw name")
            XCTAssertLessThanOrEqual(raw.utf8.count, 255, "\(name): names are stored with a u8 length")
            if let other = seen[raw] { XCTFail("\(name) and \(other) are both \"\(raw)\"") }
            seen[raw] = name
        }
        // The one alias Apple itself has (kSecAttrKeyType and kSecAttrType are both "type") is a
        // reference to the other constant, not a second entry.
        XCTAssertEqual(seen["type"], "type")
        XCTAssertEqual(AttributeKey.keyType.rawValue, "type")
        XCTAssertNil(seen.values.first { $0 == "keyType" })
    }

    func testKnownConstantsHaveApplesRawNames() {
        // SecItem.h's values, spot-checked across the families.
        let expected: [(AttributeKey, String)] = [
            (.class, "class"), (.accessible, "pdmn"), (.accessGroup, "agrp"), (.synchronizable, "sync"),
            (.label, "labl"), (.account, "acct"), (.service, "svce"), (.generic, "gena"), (.server, "srvr"),
            (.protocol, "ptcl"), (.port, "port"), (.path, "path"), (.authenticationType, "atyp"),
            (.securityDomain, "sdmn"), (.keyClass, "kcls"), (.applicationLabel, "klbl"), (.applicationTag, "atag"),
            (.keySizeInBits, "bsiz"), (.effectiveKeySize, "esiz"), (.serialNumber, "slnr"), (.issuer, "issr"),
            (.certificateType, "ctyp"), (.tokenID, "tkid"), (.matchLimit, "m_Limit"),
        ]
        for (key, raw) in expected { XCTAssertEqual(key.rawValue, raw) }
    }

    func testFamiliesAreTheirPrefixes() {
        XCTAssertTrue(AttributeKey.matchLimit.hasPrefix(.match))
        XCTAssertFalse(AttributeKey.matchLimit.hasPrefix(.return))
        XCTAssertTrue(AttributeKey(rawValue: "r_Data").hasPrefix(.return))
        XCTAssertTrue(AttributeKey(rawValue: "v_PersistentRef").hasPrefix(.value))
        XCTAssertFalse(AttributeKey.service.hasPrefix(.store))
        XCTAssertEqual(AttributeKey.service.description, "svce")
        // Short and long names, plain or not (a word-packed name and one that is not).
        let cases: [(String, AttributeKey.Family?)] = [
            ("r_PersistentRef", .return), ("u_AuthUI", .use), ("v_Data", .value), ("_secmod", .store), ("_", .store),
            ("acct", nil), ("nleg", nil), ("r", nil), ("rr_Data", nil), ("K_x", nil), ("r_K", .return),
            ("a_very_long_attribute", nil), ("\u{212A}_x", nil),
        ]
        for (name, family) in cases {
            let key = AttributeKey(rawValue: name)
            for f in [AttributeKey.Family.value, .return, .match, .use, .store] {
                XCTAssertEqual(key.hasPrefix(f), f == family, "\(name) \(f)")
            }
            if family != nil { XCTAssertTrue(key.mayHaveFamilyPrefix, name) }
        }
    }

    func testClassCodesAreFrozenAndRoundTrip() {
        XCTAssertEqual(ItemClass.allCases.map(\.code), [1, 2, 3, 4])
        XCTAssertEqual(ItemClass.allCases.map(\.rawValue), ["genp", "inet", "cert", "keys"])
        for c in ItemClass.allCases { XCTAssertEqual(ItemClass(code: c.code), c) }
        XCTAssertNil(ItemClass(code: 0))
        XCTAssertNil(ItemClass(code: 5))
    }

    func testPersistentReferencesAreClassAndIdentifier() {
        let uuid = (0..<16).map { UInt8($0 * 7) }
        let ref = PersistentRef(bytes: Array("inet".utf8) + uuid)
        XCTAssertEqual(ref?.itemClass, .internetPassword)
        XCTAssertEqual(ref?.uuid, uuid)
        XCTAssertEqual(ref?.bytes, Array("inet".utf8) + uuid)
        XCTAssertNil(PersistentRef(bytes: Array("inet".utf8) + uuid.dropLast()), "19 bytes")
        XCTAssertNil(PersistentRef(bytes: Array("inet".utf8) + uuid + [0]), "21 bytes")
        XCTAssertNil(PersistentRef(bytes: Array("idnt".utf8) + uuid), "not a stored class")
    }
}

/// `AttributeCoding`, the encoding of the sealed attribute blob and of every socket record.
final class AttributeCodingTests: XCTestCase {
    func decode(_ bytes: [UInt8]) throws -> Attributes {
        try bytes.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            let a = try AttributeCoding.read(from: &r)
            XCTAssertEqual(r.remaining, 0, "the whole record is read")
            return a
        }
    }

    func encode(_ a: Attributes) -> [UInt8] {
        var w = ByteWriter()
        AttributeCoding.write(a, into: &w)
        XCTAssertEqual(w.bytes.count, AttributeCoding.encodedSize(a), "encodedSize is exact")
        return w.bytes
    }

    func testEveryValueTypeRoundTripsWithItsTag() throws {
        let date = 786_000_000.25
        let cases: [(AttributeValue, [UInt8])] = [
            (.string("é"), [1, 0, 0, 0, 2, 0xc3, 0xa9]),
            (.data([0, 0xff]), [2, 0, 0, 0, 2, 0, 0xff]),
            (.number(-2), [3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]),
            (.bool(true), [4, 1]),
            (.bool(false), [4, 0]),
            (.date(date), [5] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: date.bitPattern >> (8 * UInt64($0))) }),
        ]
        for (value, tail) in cases {
            let bytes = encode([.label: value])
            XCTAssertEqual(bytes, [0, 1, 4] + Array("labl".utf8) + tail, "\(value)")
            XCTAssertEqual(try decode(bytes), [.label: value])
        }
        XCTAssertEqual(encode([:]), [0, 0])
        XCTAssertEqual(try decode([0, 0]), [:])
    }

    func testEqualDictionariesGiveEqualBytes() throws {
        var a: Attributes = [:], b: Attributes = [:]
        let keys: [AttributeKey] = [.service, .account, .label, .comment, .description, .generic, .port, .path]
        for (i, k) in keys.enumerated() { a[k] = .number(Int64(i)) }
        for (i, k) in keys.enumerated().reversed() { b[k] = .number(Int64(i)) }
        XCTAssertEqual(encode(a), encode(b))
        XCTAssertEqual(try decode(encode(a)), a)
    }

    func testMalformedRecordsAreRefusedAsDecode() {
        let good = encode([.service: "db", .account: .data([1, 2, 3])])
        for cut in 0..<good.count {
            XCTAssertThrowsError(try decode(Array(good.prefix(cut))), "cut at \(cut)") { error in
                XCTAssertEqual(error as? KeychainStatus, .decode)
            }
        }
        // An unknown type tag.
        XCTAssertThrowsError(try decode([0, 1, 4] + Array("labl".utf8) + [6, 0])) { XCTAssertEqual($0 as? KeychainStatus, .decode) }
        // A data length past the end.
        XCTAssertThrowsError(try decode([0, 1, 4] + Array("labl".utf8) + [2, 0xff, 0xff, 0xff, 0xff])) {
            XCTAssertEqual($0 as? KeychainStatus, .decode)
        }
    }

    func testFieldsReadTheSameBytesByName() throws {
        let fields: Fields = ["name": "team", "mode": .number(0o440), "lock": .bool(false)]
        var w = ByteWriter()
        AttributeCoding.write(fields, into: &w)
        XCTAssertEqual(w.bytes.count, AttributeCoding.encodedSize(fields))
        let back = try w.bytes.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            return try AttributeCoding.readFields(from: &r)
        }
        XCTAssertEqual(back, fields)
        XCTAssertEqual(Attributes(fields: fields).fields, fields)
    }

    func testByteReaderRefusesShortInput() throws {
        var w = ByteWriter()
        w.u16(0x0102); w.u32(0x03040506); w.u64(0x0708090a0b0c0d0e); w.lengthPrefixed([0xaa])
        XCTAssertEqual(w.bytes, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 0, 0, 1, 0xaa])
        try w.bytes.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            XCTAssertEqual(try r.u16(), 0x0102)
            XCTAssertEqual(try r.u32(), 0x03040506)
            XCTAssertEqual(try r.u64(), 0x0708090a0b0c0d0e)
            XCTAssertEqual(try r.lengthPrefixed(), [0xaa])
            XCTAssertThrowsError(try r.u8()) { XCTAssertTrue($0 is ByteReader.Truncated) }
            XCTAssertThrowsError(try r.raw(-1)) { XCTAssertTrue($0 is ByteReader.Truncated) }
            XCTAssertThrowsError(try r.skip(1)) { XCTAssertTrue($0 is ByteReader.Truncated) }
        }
    }
}

/// Statuses as callers see them: Apple's numbers and sentences, the `security` tool's exit
/// codes, and the one mapping from lower layers' errors.
final class StatusMappingTests: XCTestCase {
    func testStatusesKeepApplesNumbersSentencesAndExitCodes() {
        let table: [(KeychainStatus, Int32, String, Int32)] = [
            (.success, 0, "No error.", 0),
            (.param, -50, "One or more parameters passed to a function were not valid.", 206),
            (.authFailed, -25293, "The user name or passphrase you entered is not correct.", 51),
            (.duplicateItem, -25299, "The specified item already exists in the keychain.", 45),
            (.itemNotFound, -25300, "The specified item could not be found in the keychain.", 44),
            (.noSuchKeychain, -25294, "The specified keychain could not be found.", 50),
            (.invalidKeychain, -25295, "The specified keychain is not a valid keychain file.", 49),
            (.interactionNotAllowed, -25308, "User interaction is not allowed.", 36),
            (.io, -36, "I/O error.", 220),
            (.decode, -26275, "Unable to decode the provided data.", 93),
            (.missingEntitlement, -34018, "A required entitlement isn't present.", 30),
        ]
        for (status, raw, message, exit) in table {
            XCTAssertEqual(status.rawValue, raw)
            XCTAssertEqual(status.message, message)
            XCTAssertEqual(status.exitCode, exit, "\(status)")
            XCTAssertEqual(status.description, "\(message) (\(raw))")
        }
        XCTAssertEqual(KeychainStatus(rawValue: -1).message, "OSStatus -1")
    }

    func testCatchPatternsMatchByValue() {
        func outcome(_ error: Error) -> String {
            do { throw error } catch KeychainStatus.itemNotFound { return "not found" } catch { return "other" }
        }
        XCTAssertEqual(outcome(KeychainStatus.itemNotFound), "not found")
        XCTAssertEqual(outcome(KeychainStatus.duplicateItem), "other")
        XCTAssertEqual(outcome(CryptoError.allocationFailed), "other")
    }

    func testKnownErrorsMapToOneStatus() {
        struct Unknown: Error {}
        struct Full: KeychainStatusConvertibleInPart { var statusIfKnown: KeychainStatus? }
        XCTAssertEqual(KeychainStatus(known: KeychainStatus.readOnly), .readOnly)
        XCTAssertEqual(KeychainStatus(known: VaultFileError.missing), .noSuchKeychain)
        XCTAssertEqual(KeychainStatus(known: VaultFileError.exists), .duplicateKeychain)
        XCTAssertEqual(KeychainStatus(known: VaultFileError.notAVault), .invalidKeychain)
        XCTAssertEqual(KeychainStatus(known: VaultFileError.corruptHeader), .invalidKeychain)
        XCTAssertEqual(KeychainStatus(known: VaultFileError.newerFormat(found: 9, supported: 3)), .invalidKeychain)
        XCTAssertEqual(KeychainStatus(known: VaultFileError.io), .io)
        XCTAssertEqual(KeychainStatus(known: CryptoError.allocationFailed), .allocate)
        XCTAssertEqual(KeychainStatus(known: CryptoError.keyDerivationFailed), .allocate)
        XCTAssertEqual(KeychainStatus(known: Full(statusIfKnown: .diskFull)), .diskFull)
        XCTAssertNil(KeychainStatus(known: Full(statusIfKnown: nil)), "a lower layer's error it does not know")
        XCTAssertNil(KeychainStatus(known: Unknown()))
    }

    func testAllocationFailuresAreNeverADamagedFile() throws {
        XCTAssertTrue(isAllocationFailure(CryptoError.allocationFailed))
        XCTAssertTrue(isAllocationFailure(KeychainStatus.allocate))
        XCTAssertFalse(isAllocationFailure(KeychainStatus.decode))
        XCTAssertThrowsError(try mapAllocationFailure { () -> Int in throw CryptoError.allocationFailed }) {
            XCTAssertEqual($0 as? KeychainStatus, .allocate)
        }
        XCTAssertThrowsError(try mapAllocationFailure { () -> Int in throw KeychainStatus.decode }) {
            XCTAssertEqual($0 as? KeychainStatus, .decode, "other errors pass unchanged")
        }
        XCTAssertEqual(try mapAllocationFailure { 7 }, 7)
    }
}
