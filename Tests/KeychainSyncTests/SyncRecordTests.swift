@testable import KeychainSync
import KeychainCore
import KeychainCrypto
import XCTest

/// The record format of docs/sync.md: what a member seals opens on another member, and any
/// change the server makes to a record, or a record moved to another row, is refused.
final class SyncRecordTests: XCTestCase {
    let uuid = randomBytes(16)

    func payload(secret: String = "s3cret", attributes: String = "attribute blob") throws -> SyncPayload {
        SyncPayload(uuid: uuid, itemClass: .genericPassword, protection: .whenUnlocked,
                    attributes: try SecureBytes(copying: Array(attributes.utf8)), secret: try SecureBytes(copying: Array(secret.utf8)))
    }

    func text(_ s: SecureBytes) -> String { s.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

    func testARecordOpensWithTheCircleKeyAndTheWritersKey() throws {
        let circle = try CircleKeys.generate(), writer = try HostKeys.generate()
        let record = try SyncRecord.seal(try payload(), uuid: uuid, version: 7, circle: circle, writer: writer)
        let header = try SyncRecord.header(of: record)
        XCTAssertEqual(header, SyncRecord.Header(deleted: false, epoch: 1, writer: writer.hostID,
                                                 token: circle.token(of: uuid), version: 7))
        XCTAssertEqual(Array(record[0..<4]), Array("KCSR".utf8))
        let (opened, p) = try SyncRecord.open(record, circle: circle, writerSigningKey: writer.signPublic, expected: header)
        XCTAssertEqual(opened, uuid)
        let got = try XCTUnwrap(p)
        XCTAssertEqual(text(got.secret), "s3cret")
        XCTAssertEqual(text(got.attributes), "attribute blob")
        XCTAssertEqual(got.itemClass, .genericPassword)
        XCTAssertEqual(got.protection, .whenUnlocked)
    }

    func testATombstoneIsSignedAndNamesItsItem() throws {
        let circle = try CircleKeys.generate(), writer = try HostKeys.generate()
        let record = try SyncRecord.seal(nil, uuid: uuid, version: 3, circle: circle, writer: writer)
        let header = try SyncRecord.header(of: record)
        XCTAssertTrue(header.deleted)
        let (opened, p) = try SyncRecord.open(record, circle: circle, writerSigningKey: writer.signPublic, expected: header)
        XCTAssertEqual(opened, uuid)
        XCTAssertNil(p)
    }

    func testEveryChangedByteIsRefused() throws {
        let circle = try CircleKeys.generate(), writer = try HostKeys.generate()
        let record = try SyncRecord.seal(try payload(), uuid: uuid, version: 2, circle: circle, writer: writer)
        let header = try SyncRecord.header(of: record)
        for i in record.indices {
            var bad = record
            bad[i] ^= 0x01
            XCTAssertThrowsError(try SyncRecord.open(bad, circle: circle, writerSigningKey: writer.signPublic, expected: header),
                                 "byte \(i)")
        }
    }

    func testARecordResignedByTheServerFailsItsAssociatedData() throws {
        // A server that could sign (a member's key it somehow holds) still cannot move a record
        // to another item, version or deleted flag: the associated data binds them.
        let circle = try CircleKeys.generate(), writer = try HostKeys.generate()
        let record = try SyncRecord.seal(try payload(), uuid: uuid, version: 2, circle: circle, writer: writer)
        for change in [{ (h: inout SyncRecord.Header) in h.version = 3 }, { $0.deleted = true },
                       { $0.token = circle.token(of: randomBytes(16)) }] {
            var header = try SyncRecord.header(of: record)
            change(&header)
            var forged = SyncRecord.encode(header) + record[SyncRecord.headerLength..<(record.count - 64)]
            forged += try writer.sign(forged)
            XCTAssertThrowsError(try SyncRecord.open(forged, circle: circle, writerSigningKey: writer.signPublic, expected: header)) {
                XCTAssertEqual($0 as? SyncError, .badCiphertext)
            }
        }
    }

    func testAnotherSignerAnotherCircleOrAnotherRowIsRefused() throws {
        let circle = try CircleKeys.generate(), writer = try HostKeys.generate(), stranger = try HostKeys.generate()
        let record = try SyncRecord.seal(try payload(), uuid: uuid, version: 1, circle: circle, writer: writer)
        let header = try SyncRecord.header(of: record)
        XCTAssertThrowsError(try SyncRecord.open(record, circle: circle, writerSigningKey: stranger.signPublic, expected: header)) {
            XCTAssertEqual($0 as? SyncError, .badSignature)
        }
        let other = try CircleKeys.parse(circleID: circle.circleID, epoch: 1, secrets: try CircleKeys.generate().secrets())
        XCTAssertThrowsError(try SyncRecord.open(record, circle: other, writerSigningKey: writer.signPublic, expected: header)) {
            XCTAssertEqual($0 as? SyncError, .badCiphertext)
        }
        var elsewhere = header
        elsewhere.version = 9
        XCTAssertThrowsError(try SyncRecord.open(record, circle: circle, writerSigningKey: writer.signPublic, expected: elsewhere)) {
            XCTAssertEqual($0 as? SyncError, .mismatch)
        }
    }

    func testSizesArePaddedToPowersOfTwo() throws {
        let circle = try CircleKeys.generate(), writer = try HostKeys.generate()
        func size(_ secret: String) throws -> Int {
            try SyncRecord.seal(try payload(secret: secret), uuid: uuid, version: 1, circle: circle, writer: writer).count
        }
        let fixed = SyncRecord.headerLength + 72 + 40 + 64
        XCTAssertEqual(try size("a"), fixed + 256)
        XCTAssertEqual(try size(String(repeating: "a", count: 150)), fixed + 256)
        XCTAssertEqual(try size(String(repeating: "a", count: 300)), fixed + 512)
        XCTAssertEqual(try SyncRecord.seal(nil, uuid: uuid, version: 1, circle: circle, writer: writer).count, fixed + 256)
    }

    func testTheServerSeesNoPlaintext() throws {
        let circle = try CircleKeys.generate(), writer = try HostKeys.generate()
        let record = try SyncRecord.seal(try payload(secret: "needle-secret", attributes: "needle-attrs"), uuid: uuid,
                                         version: 1, circle: circle, writer: writer)
        for needle in ["needle-secret", "needle-attrs"] {
            XCTAssertNil(record.firstRange(of: Array(needle.utf8)))
        }
        XCTAssertNil(record.firstRange(of: uuid), "the uuid travels only as its token")
    }

    func testAJoinRequestOpensOnlyWithItsCode() throws {
        let host = try HostKeys.generate()
        let code = JoinCode.generate()
        XCTAssertEqual(code.count, 11)
        let normalized = try XCTUnwrap(JoinCode.normalize(code.lowercased().replacingOccurrences(of: "-", with: " ")))
        let key = try JoinCode.key(code: normalized, host: host.hostID)
        let request = JoinCode.request(host, name: "b", key: key)
        let member = try JoinCode.openRequest(request, host: host.hostID, key: key)
        XCTAssertEqual(member.signKey, host.signPublic)
        XCTAssertEqual(member.boxKey, host.boxPublic)
        XCTAssertEqual(member.name, "b")
        let wrong = try JoinCode.key(code: Array("0000000000".utf8), host: host.hostID)
        XCTAssertThrowsError(try JoinCode.openRequest(request, host: host.hostID, key: wrong))
        XCTAssertThrowsError(try JoinCode.openRequest(request, host: randomBytes(16), key: key), "bound to the host id")
        XCTAssertNil(JoinCode.normalize("12345"))
        XCTAssertNil(JoinCode.normalize("UUUUU-UUUUU"), "U is not a code character")
    }

    func testCircleSecretsSealedToAMemberOpenOnlyThere() throws {
        let circle = try CircleKeys.generate(), member = try HostKeys.generate(), other = try HostKeys.generate()
        let secrets = try circle.secrets()
        let sealed = try SealedBox.seal(secrets, to: member.boxPublic)
        let opened = try member.openSealed(sealed)
        XCTAssertTrue(opened.constantTimeEquals(secrets))
        XCTAssertThrowsError(try other.openSealed(sealed))
        let roundTrip = try HostKeys.parse(try member.serialized())
        XCTAssertEqual(roundTrip.signPublic, member.signPublic)
        XCTAssertEqual(roundTrip.boxPublic, member.boxPublic)
        XCTAssertEqual(roundTrip.hostID, member.hostID)
    }

    func testSignatures() throws {
        let pair = try Signature.keyPair()
        let sig = try Signature.sign(Array("m".utf8), secretKey: pair.secretKey)
        XCTAssertTrue(Signature.verify(sig, of: Array("m".utf8), publicKey: pair.publicKey))
        XCTAssertFalse(Signature.verify(sig, of: Array("n".utf8), publicKey: pair.publicKey))
        XCTAssertEqual(try Signature.publicKey(of: pair.secretKey), pair.publicKey)
    }

    func testAConnectionStringWithAPasswordIsRecognised() throws {
        XCTAssertFalse(try PGConnection.conninfoHasPassword("host=/run/pg dbname=x user=u passfile=/p"))
        XCTAssertTrue(try PGConnection.conninfoHasPassword("host=/run/pg password=hunter2"))
        XCTAssertTrue(try PGConnection.conninfoHasPassword("postgresql://u:hunter2@db/x"))
        XCTAssertThrowsError(try PGConnection.conninfoHasPassword("host='unterminated"))
    }
}
