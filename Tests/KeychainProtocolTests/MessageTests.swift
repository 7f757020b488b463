import Glibc
import KeychainCrypto
import KeychainModel
import KeychainProtocol
import XCTest

/// The request and response encodings (Messages.swift's layout comment): their bytes, their
/// round trips, and what malformed payloads are refused with.
final class MessageTests: XCTestCase {
    func testOperationCodesAreFrozen() {
        let names: [KeychainProtocol.Operation] = [
            .ping, .unlock, .lock, .info, .add, .copyMatching, .update, .delete, .changePassphrase, .setSettings, .groupAdd,
            .groupSet, .groupList, .groupRemove, .stop, .mount, .unmount, .audit, .export, .import, .watch, .verify, .useKey,
            .serviceTimes, .checkSignature, .lookup, .sync,
        ]
        let numbers: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 30]
        let codes = Array(zip(names, numbers))
        XCTAssertEqual(KeychainProtocol.Operation.allCases.count, codes.count, "every operation is listed here")
        for (op, code) in codes {
            XCTAssertEqual(op.rawValue, code, "\(op)")
            XCTAssertEqual(KeychainProtocol.Operation(rawValue: code), op)
        }
        XCTAssertEqual(WireProtocol.version, 1)
    }

    func testARequestsBytes() throws {
        let r = Request(.delete, query: [.service: "s"], options: ["o": .bool(true)], secrets: [try SecureBytes(copying: [0xee])])
        let expected: [UInt8] = [0, 1, 8]
            + [0, 1, 4] + Array("svce".utf8) + [1, 0, 0, 0, 1, UInt8(ascii: "s")]
            + [0, 0]
            + [0, 1, 1, UInt8(ascii: "o"), 4, 1]
            + [1, 0, 0, 0, 1, 0xee]
        XCTAssertEqual(bytes(try r.encoded()), expected)
    }

    func testRequestsRoundTrip() throws {
        let secrets = [try SecureBytes(copying: Array("pass phrase".utf8)), try SecureBytes(count: 0),
                       try SecureBytes(copying: (0..<300).map { UInt8(truncatingIfNeeded: $0) })]
        for op in KeychainProtocol.Operation.allCases where op != .lookup {  // a lookup has its own payload (LookupMessageTests)
            let r = Request(op, query: [.class: "genp", .service: "db", .matchLimit: "m_LimitAll"],
                            changes: [.label: "new", .port: .number(443), .creationDate: .date(1.5)],
                            options: ["generate": "private", "n": .data([1, 2])], secrets: secrets)
            let back = try Request.decode(try r.encoded())
            XCTAssertEqual(back.operation, op)
            XCTAssertEqual(back.query, r.query)
            XCTAssertEqual(back.changes, r.changes)
            XCTAssertEqual(back.options, r.options)
            XCTAssertEqual(back.secrets.map(bytes), secrets.map(bytes))
            XCTAssertNil(back.descriptor, "a descriptor is never encoded")
        }
    }

    func status(_ body: () throws -> Any) -> KeychainStatus? {
        do { _ = try body(); return nil } catch { return error as? KeychainStatus }
    }

    func testMalformedRequestsAreRefused() throws {
        let good = bytes(try Request(.add, query: [.service: "db"], secrets: [try SecureBytes(copying: [1, 2, 3])]).encoded())
        XCTAssertEqual(status { try Request.decode(try SecureBytes(copying: [0, 2] + good.dropFirst(2))) }, .badReq, "another version")
        XCTAssertEqual(status { try Request.decode(try SecureBytes(copying: [0, 1, 27] + good.dropFirst(3))) }, .badReq, "an unknown operation")
        XCTAssertEqual(status { try Request.decode(try SecureBytes(copying: [0, 1, 0] + good.dropFirst(3))) }, .badReq, "operation 0")
        XCTAssertEqual(status { try Request.decode(try SecureBytes(copying: good + [0])) }, .decode, "a byte past the end")
        for cut in 0..<good.count {
            XCTAssertEqual(status { try Request.decode(try SecureBytes(copying: Array(good.prefix(cut)))) }, .decode, "cut at \(cut)")
        }
        // A secret whose length runs past the payload.
        let secretLength = good.count - 3 - 4
        var long = good
        long[secretLength + 3] = 4
        XCTAssertEqual(status { try Request.decode(try SecureBytes(copying: long)) }, .decode)
    }

    func testResponsesRoundTripInEveryShape() throws {
        let item = FoundItem(attributes: [.class: "genp", .account: "a"], secret: try SecureBytes(copying: [7, 7]),
                             persistentRef: Array("genp".utf8) + Array(repeating: 1, count: 16))
        let bare = FoundItem(attributes: [.class: "inet"], secret: nil, persistentRef: nil)
        let results: [QueryResult] = [
            .none, .value(.data(try SecureBytes(copying: [1, 2, 3]))), .value(.persistentRef([4, 5])), .value(.item(item)),
            .array([]), .array([.item(item), .item(bare), .data(try SecureBytes(count: 0)), .persistentRef([])]),
        ]
        for (i, result) in results.enumerated() {
            let r = Response(status: .itemNotFound, result: result, info: ["state": "unlocked", "n": .number(Int64(i))])
            let back = try Response.decode(try r.encoded())
            XCTAssertEqual(back.status, .itemNotFound)
            XCTAssertEqual(back.info, r.info)
            XCTAssertEqual(describe(back.result), describe(result), "shape \(i)")
        }
    }

    /// A comparable form of a result: its shape and each value's kind and bytes.
    func describe(_ r: QueryResult) -> String {
        func value(_ v: ReturnedValue) -> String {
            switch v {
            case .data(let d): return "data\(bytes(d))"
            case .persistentRef(let p): return "ref\(p)"
            case .item(let i):
                return "item\(i.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })"
                    + (i.secret.map { "secret\(bytes($0))" } ?? "no secret") + (i.persistentRef.map { "ref\($0)" } ?? "no ref")
            }
        }
        switch r {
        case .none: return "none"
        case .value(let v): return "value " + value(v)
        case .array(let a): return "array " + a.map(value).joined(separator: ",")
        }
    }

    func testAResponsesBytes() throws {
        let r = Response(status: .duplicateItem, result: .value(.persistentRef([0xab])), info: [:])
        XCTAssertEqual(bytes(try r.encoded()), [0, 1] + [0xff, 0xff, 0x9d, 0x2d] + [1] + [0, 0, 0, 1]
                       + [2, 0, 0, 0, 1, 0, 0, 0, 1, 0xab] + [0, 0])
    }

    /// A lookup's reply (one secret, no info) is written by its own path: the same layout.
    func testADataReplysBytes() throws {
        let r = Response(status: .success, result: .value(.data(try SecureBytes(copying: [0xc1, 0xc2]))))
        XCTAssertEqual(bytes(try r.encoded()), [0, 1] + [0, 0, 0, 0] + [1] + [0, 0, 0, 1]
                       + [1, 0, 0, 1, 0, 0, 0, 2, 0xc1, 0xc2, 0] + [0, 0])
        let empty = Response(status: .itemNotFound, result: .value(.data(try SecureBytes(count: 0))))
        XCTAssertEqual(bytes(try empty.encoded()), [0, 1] + [0xff, 0xff, 0x9d, 0x2c] + [1] + [0, 0, 0, 1]
                       + [1, 0, 0, 1, 0, 0, 0, 0, 0] + [0, 0])
        let back = try Response.decode(try r.encoded())
        guard case .value(.data(let secret)) = back.result else { return XCTFail("\(back.result)") }
        XCTAssertEqual(bytes(secret), [0xc1, 0xc2])
    }

    func testMalformedResponsesAreRefused() throws {
        let good = bytes(try Response(result: .value(.data(try SecureBytes(copying: [1]))), info: ["a": 1]).encoded())
        XCTAssertEqual(status { try Response.decode(try SecureBytes(copying: [0, 9] + good.dropFirst(2))) }, .badReq)
        for cut in 0..<good.count {
            XCTAssertEqual(status { try Response.decode(try SecureBytes(copying: Array(good.prefix(cut)))) }, .decode, "cut at \(cut)")
        }
        XCTAssertEqual(status { try Response.decode(try SecureBytes(copying: good + [0])) }, .decode, "a byte past the end")
        var shape = good
        shape[6] = 3
        XCTAssertEqual(status { try Response.decode(try SecureBytes(copying: shape)) }, .decode, "an unknown shape")
        var kind = good
        kind[11] = 4
        XCTAssertEqual(status { try Response.decode(try SecureBytes(copying: kind)) }, .decode, "an unknown value kind")
        // One value announced as a bare value, two sent.
        let two = bytes(try Response(result: .array([.persistentRef([1]), .persistentRef([2])])).encoded())
        var oneOfTwo = two
        oneOfTwo[6] = 1
        XCTAssertEqual(status { try Response.decode(try SecureBytes(copying: oneOfTwo)) }, .decode)
        // A count larger than the bytes that follow.
        var count = two
        count[7...10] = [0x7f, 0xff, 0xff, 0xff]
        XCTAssertEqual(status { try Response.decode(try SecureBytes(copying: count)) }, .decode)
    }
}

/// The daemon's files as the vault path names them, and the mount records it keeps.
final class PathsTests: XCTestCase {
    func testFilesOfAVaultShareOneHashedNameInTheRuntimeDirectory() throws {
        let before = Paths.environment("KEYCHAINFS_RUNTIME_DIR")
        setenv("KEYCHAINFS_RUNTIME_DIR", "/run/kc-test", 1)
        defer { if let before { setenv("KEYCHAINFS_RUNTIME_DIR", before, 1) } else { unsetenv("KEYCHAINFS_RUNTIME_DIR") } }
        let vault = "/nonexistent-dir-\(getpid())/a.vault"
        let socket = Paths.socket(forVault: vault)
        XCTAssertTrue(socket.hasPrefix("/run/kc-test/"), socket)
        let name = socket.dropFirst("/run/kc-test/".count).dropLast(".sock".count)
        XCTAssertEqual(name.count, 32, "16 bytes of BLAKE2b in hex")
        XCTAssertTrue(name.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        XCTAssertEqual(Paths.lockoutFile(forVault: vault), "/run/kc-test/\(name).lockout")
        XCTAssertEqual(Paths.mountRecords(forVault: vault), "/run/kc-test/\(name).mounts")
        XCTAssertEqual(Paths.logFile(forVault: vault), "/run/kc-test/\(name).log")
        XCTAssertNotEqual(Paths.socket(forVault: vault + "2"), socket)
        // One vault reached through two spellings is one daemon.
        XCTAssertEqual(Paths.socket(forVault: "/tmp/../tmp/x.vault"), Paths.socket(forVault: "/tmp/x.vault"))
        XCTAssertEqual(Paths.canonical("/tmp/../tmp/x.vault"), Paths.canonical("/tmp/x.vault"))
    }

    func testMountRecordsRoundTripAndSkipWhatCannotBeALine() {
        let records = [MountRecord(mountpoint: "/run/keychain", options: "allow_other,groups=a:b", uid: 0),
                       MountRecord(mountpoint: "/home/u/k", options: "", uid: 1000)]
        let text = MountRecord.encode(records)
        XCTAssertEqual(text, "0\t/run/keychain\tallow_other,groups=a:b\n1000\t/home/u/k\t\n")
        XCTAssertEqual(MountRecord.decode(text), records)
        XCTAssertEqual(MountRecord.encode([MountRecord(mountpoint: "/a\tb", options: "", uid: 0),
                                           MountRecord(mountpoint: "/a", options: "x\ny", uid: 0)]), "")
        XCTAssertEqual(MountRecord.decode("x\t/a\t\n0\trelative\t\n0\t/ok\tro\n"), [MountRecord(mountpoint: "/ok", options: "ro", uid: 0)])
    }
}
