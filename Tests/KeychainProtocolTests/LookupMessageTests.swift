import KeychainCrypto
import KeychainModel
import KeychainProtocol
import XCTest

/// The `lookup` request (`ItemLookup`): which `copyMatching` queries it stands for, its bytes
/// (Messages.swift's layout comment), their round trip, and what malformed payloads are refused with.
final class LookupMessageTests: XCTestCase {
    private let read: Attributes = [.class: "genp", .service: "db", .account: "app", .returnData: true]

    private func bytes(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

    private func status(_ body: () throws -> Any) -> KeychainStatus? {
        do { _ = try body(); return nil } catch { return error as? KeychainStatus }
    }

    /// The payload `DaemonClient` makes on the stack for `query`, or nil.
    private func stackPayload(_ query: Attributes, room: Int = 1024) -> [UInt8]? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: room, alignment: 8)
        defer { buffer.deallocate() }
        return ItemLookup.payload(for: query, into: buffer).map { Array(buffer[0..<$0]) }
    }

    func testALookupsBytes() throws {
        let lookup = try XCTUnwrap(ItemLookup(query: read.merging([.accessGroup: "team"]) { a, _ in a }))
        let expected: [UInt8] = [0, 1, 26, 1, 1, 2]
            + [1, 0, 0, 0, 3] + Array("app".utf8)
            + [1, 0, 0, 0, 2] + Array("db".utf8)
            + [1, 0, 0, 0, 4] + Array("team".utf8)
        XCTAssertEqual(bytes(try lookup.request.encoded()), expected)
        XCTAssertEqual(stackPayload(read.merging([.accessGroup: "team"]) { a, _ in a }), expected, "the same bytes from the stack")
    }

    func testTheQueriesALookupStandsFor() throws {
        let plain = try XCTUnwrap(ItemLookup(query: read))
        XCTAssertEqual(plain.itemClass, .genericPassword)
        XCTAssertEqual(plain.primaryKey, ["app", "db"], "in the class's primary-key order")
        XCTAssertTrue(plain.returnData)
        XCTAssertFalse(plain.returnAttributes || plain.returnPersistentRef)
        XCTAssertNil(plain.accessGroup)
        XCTAssertEqual(plain.query, read)

        let all = try XCTUnwrap(ItemLookup(query: [.class: "genp", .service: "db", .account: "app", .returnData: false,
                                                   .returnAttributes: true, .returnPersistentRef: true, .accessGroup: "g"]))
        XCTAssertEqual(all.query, [.class: "genp", .service: "db", .account: "app", .returnAttributes: true,
                                   .returnPersistentRef: true, .accessGroup: "g"], "a return key set to false asks for nothing")
        XCTAssertNotNil(ItemLookup(query: [.class: "genp", .service: "db", .account: "app"]), "no return key: a search for nothing")
        // What such a search ignores or takes as its default leaves the lookup as it is.
        let apple = read.merging([.matchLimit: .matchLimitOne, .useDataProtectionKeychain: .bool(true)]) { a, _ in a }
        XCTAssertEqual(ItemLookup(query: apple), plain)
        XCTAssertEqual(stackPayload(apple), bytes(try plain.request.encoded()))

        let internet: Attributes = [.class: "inet", .account: "a", .securityDomain: "", .server: "example.com", .protocol: "htps",
                                    .authenticationType: "dflt", .port: .number(443), .path: "/", .returnData: true]
        let inet = try XCTUnwrap(ItemLookup(query: internet))
        XCTAssertEqual(inet.primaryKey, ["a", "", "example.com", "htps", "dflt", .number(443), "/"])
        XCTAssertEqual(inet.query, internet)

        // Every other shape goes as copyMatching.
        var others: [Attributes] = [
            [.service: "db", .account: "app", .returnData: true],
            [.class: "genp", .service: "db", .returnData: true],
            [.class: "kSecClassGenericPassword", .service: "db", .account: "app", .returnData: true],
            [.class: "keys", .applicationLabel: .data([1]), .returnData: true],
            [.class: "cert", .certificateType: .number(1), .issuer: .data([1]), .serialNumber: .data([2]), .returnData: true],
            internet.filter { $0.key != .port },
        ]
        for extra: (AttributeKey, AttributeValue) in [
            (.matchLimit, .matchLimitAll), (.matchLimit, .number(1)), (.synchronizable, .bool(false)),
            (.useAuthenticationUI, .authenticationUISkip), (.returnRef, .bool(true)), (.label, "l"), (.accessible, "ak"),
            (.valuePersistentRef, .data([1])), (.useDataProtectionKeychain, .number(1)), (.useNoAuthenticationUI, .bool(true)),
        ] {
            var q = read
            q[extra.0] = extra.1
            others.append(q)
        }
        for (key, value): (AttributeKey, AttributeValue) in [(.returnData, .number(1)), (.returnAttributes, "yes"), (.accessGroup, .data([1])),
                                                             (.class, .data(Array("genp".utf8)))] {
            var q = read
            q[key] = value
            others.append(q)
        }
        for q in others {
            XCTAssertNil(ItemLookup(query: q), "\(q.keys.sorted())")
            XCTAssertNil(stackPayload(q), "\(q.keys.sorted())")
        }
        XCTAssertNotNil(stackPayload(read, room: 22), "22 bytes: 6, two values of 8 and 7, 1 for no group")
        for room in [0, 6, 13, 20, 21] { XCTAssertNil(stackPayload(read, room: room), "a payload that does not fit \(room) bytes") }
    }

    func testLookupsRoundTripAndMatchTheStackPayload() throws {
        let queries: [Attributes] = [
            read,
            [.class: "genp", .service: "", .account: .data([0, 0xff]), .returnAttributes: true, .accessGroup: ""],
            [.class: "genp", .service: .number(7), .account: .bool(true), .returnPersistentRef: true],
            [.class: "inet", .account: "a", .securityDomain: "d", .server: "s", .protocol: "htps", .authenticationType: "dflt",
             .port: .number(-1), .path: .date(2.5), .returnData: true, .returnAttributes: true, .accessGroup: "team"],
        ]
        for q in queries {
            let lookup = try XCTUnwrap(ItemLookup(query: q))
            let encoded = try lookup.request.encoded()
            XCTAssertEqual(stackPayload(q), bytes(encoded))
            let back = try Request.decode(encoded)
            XCTAssertEqual(back.operation, .lookup)
            XCTAssertEqual(back.lookup, lookup)
            XCTAssertEqual(try ItemLookup(decoding: back), lookup)
            XCTAssertTrue(back.query.isEmpty && back.secrets.isEmpty)
        }
        XCTAssertEqual(status { try ItemLookup(decoding: Request(.copyMatching, query: self.read)) }, .param)
    }

    func testMalformedLookupsAreRefused() throws {
        let good = bytes(try ItemLookup(query: read)!.request.encoded())
        XCTAssertEqual(status { try Request.decode(try SecureBytes(copying: good + [0])) }, .decode, "a byte past the end")
        for cut in 3..<good.count {
            XCTAssertEqual(status { try Request.decode(try SecureBytes(copying: Array(good.prefix(cut)))) }, .decode, "cut at \(cut)")
        }
        func with(_ index: Int, _ byte: UInt8) -> [UInt8] { var b = good; b[index] = byte; return b }
        for (bad, why) in [(with(3, 0), "class 0"), (with(3, 3), "a class with no lookup"), (with(4, 8), "an unknown return bit"),
                           (with(5, 1), "a value short"), (with(5, 3), "a value more"), (with(6, 9), "an unknown value tag"),
                           (with(good.count - 1, 2), "a group flag of 2")] {
            XCTAssertEqual(status { try Request.decode(try SecureBytes(copying: bad)) }, .decode, why)
        }
    }
}
