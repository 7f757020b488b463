import Foundation
import Glibc
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import KeychainTestSupport
import XCTest

/// The daemon's socket decoders (the FuzzMessages target, docs/fuzzing.md) fed the checked-in
/// seed corpus and hostile frames: each must decode or fail with the documented status.
final class ProtocolFuzzRegressionTests: XCTestCase {
    static func corpus() throws -> [(String, [UInt8])] {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Fuzz/Corpus/FuzzMessages").standardized.path
        return try FileManager.default.contentsOfDirectory(atPath: dir).sorted().map {
            ($0, Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/" + $0))))
        }
    }

    /// Reads every frame of `stream` through a real socket pair, as the daemon reads a client.
    /// Returns the payloads and the status that ended the stream (nil for a clean end).
    func readFrames(_ stream: [UInt8]) throws -> (payloads: [SecureBytes], error: KeychainStatus?) {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        defer { close(fds[1]) }
        let sent = stream.withUnsafeBytes { send(fds[0], $0.baseAddress, $0.count, 0) }
        XCTAssertEqual(sent, stream.count)
        close(fds[0])
        var payloads: [SecureBytes] = []
        do {
            while let p = try Frame.read(from: fds[1]) { payloads.append(p) }
            return (payloads, nil)
        } catch let status as KeychainStatus {
            return (payloads, status)
        }
    }

    func bytes(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

    func testCorpusFramesDecodeToTheMessagesTheyHold() throws {
        let files = Dictionary(uniqueKeysWithValues: try Self.corpus())
        XCTAssertGreaterThanOrEqual(files.count, 4)

        let ping = try readFrames(try XCTUnwrap(files["valid-ping"]))
        XCTAssertNil(ping.error)
        XCTAssertEqual(try ping.payloads.map { try Request.decode($0).operation }, [.ping])

        let add = try Request.decode(try XCTUnwrap(readFrames(try XCTUnwrap(files["valid-add-with-secret"])).payloads.first))
        XCTAssertEqual(add.operation, .add)
        XCTAssertEqual(add.query["svce"], "db")
        XCTAssertEqual(add.secrets.map { String(decoding: bytes($0), as: UTF8.self) }, ["s3cret"])

        let two = try readFrames(try XCTUnwrap(files["valid-copy-then-update"]))
        XCTAssertEqual(try two.payloads.map { try Request.decode($0).operation }, [.copyMatching, .update])

        let items = try readFrames(try XCTUnwrap(files["valid-response-items"])).payloads
        let response = try Response.decode(try XCTUnwrap(items.first))
        XCTAssertEqual(response.status, .success)
        XCTAssertEqual(response.result.array?.count, 3)
        XCTAssertEqual(response.result.array?.first?.item.map { String(decoding: bytes($0.secret!), as: UTF8.self) }, "s3cret")

        let error = try Response.decode(try XCTUnwrap(readFrames(try XCTUnwrap(files["valid-response-error"])).payloads.first))
        XCTAssertEqual(error.status, .itemNotFound)

        // Every payload, whatever it holds, decodes as the other kind of message or fails cleanly.
        for (name, stream) in files {
            for payload in try readFrames(stream).payloads {
                let decoders: [() throws -> Void] = [{ _ = try Request.decode(payload) }, { _ = try Response.decode(payload) }]
                for decode in decoders {
                    do { try decode() } catch {
                        XCTAssertTrue([.decode, .badReq].contains(error as? KeychainStatus), "\(name): \(error)")
                    }
                }
            }
        }
    }

    func testTruncatedAndOverlongFramesEndTheStreamWithAStatus() throws {
        let stream = try XCTUnwrap(Self.corpus().first { $0.0 == "valid-add-with-secret" }?.1)
        XCTAssertNil(try readFrames([]).error)                               // clean end of stream
        for cut in 1..<stream.count {
            let result = try readFrames(Array(stream.prefix(cut)))
            XCTAssertTrue(result.payloads.isEmpty, "cut at \(cut)")
            XCTAssertEqual(result.error, .io, "cut at \(cut)")                 // short header or payload
        }
        // Lengths over the frame limit (17 MiB) are refused before any payload is read or allocated.
        for header: [UInt8] in [[0xff, 0xff, 0xff, 0xff], [0x04, 0x00, 0x00, 0x01], [0x80, 0, 0, 0]] {
            XCTAssertEqual(try readFrames(header + [1, 2, 3]).error, .decode)
        }
        // A good frame, then one that claims more than the limit: the first still arrives.
        let result = try readFrames(stream + [0x7f, 0xff, 0xff, 0xff])
        XCTAssertEqual(result.payloads.count, 1)
        XCTAssertEqual(result.error, .decode)
    }

    /// Large frames arrive whole across the buffer's growth steps; a frame that announces
    /// megabytes and sends a few bytes ends with errSecIO.
    func testLargeFramesArriveWholeAndUnsentOnesEndWithIO() throws {
        for length in [Frame.initialCapacity - 1, Frame.initialCapacity, Frame.initialCapacity + 1, 3 << 20 | 12345] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
            var fds: [Int32] = [0, 0]
            XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
            let writeEnd = fds[0]
            let writer = Thread {
                try? Frame.write(SecureBytes(copying: payload), to: writeEnd)
                close(writeEnd)
            }
            writer.start()
            let got = try Frame.read(from: fds[1])
            close(fds[1])
            XCTAssertEqual(got.map(bytes), payload, "a frame of \(length) bytes")
        }
        let announced: [UInt8] = [0x00, 0xc0, 0x00, 0x00]  // 12 MiB, under the limit
        XCTAssertEqual(try readFrames(announced + Array(repeating: 7, count: 100)).error, .io)
    }

    func testHostileRequestPayloadsAreDecodeOrBadRequest() throws {
        let ping = try Request(.ping).encoded()
        let valid = bytes(try Request(.add, query: ["class": "genp", "svce": "db"], changes: ["labl": "x"],
                                  options: ["o": 1], secrets: [try SecureBytes(copying: Array("pw".utf8))]).encoded())
        XCTAssertEqual(try Request.decode(ping).operation, .ping)
        let emptyRecords: [UInt8] = [0, 0, 0, 0, 0, 0]
        let cases: [(KeychainStatus, String, [UInt8])] = [
            (.badReq, "protocol version 2", [0, 2, 1] + emptyRecords + [0]),
            (.badReq, "operation 0", [0, 1, 0] + emptyRecords + [0]),
            (.badReq, "operation 255", [0, 1, 255] + emptyRecords + [0]),
            (.decode, "trailing byte", valid + [0]),
            (.decode, "255 secrets announced, none sent", [0, 1, 1] + emptyRecords + [255]),
            (.decode, "secret of 4 GiB", [0, 1, 1] + emptyRecords + [1, 0xff, 0xff, 0xff, 0xff, 0]),
            (.decode, "query record of 65535 entries", [0, 1, 6, 0xff, 0xff]),
            (.decode, "type tag 9", [0, 1, 6, 0, 1, 1, 0x61, 9] + emptyRecords + [0]),
        ]
        for (status, what, payload) in cases {
            assertStatus(status, try Request.decode(SecureBytes(copying: payload)), what)
        }
        for cut in 0..<valid.count {
            assertStatus(.decode, try Request.decode(SecureBytes(copying: valid.prefix(cut))), "cut at \(cut)")
        }
    }

    func testHostileResponsePayloadsAreDecodeErrors() throws {
        let secret = try SecureBytes(copying: Array("s".utf8))
        let valid = bytes(try Response(result: .array([.data(secret), .persistentRef([1, 2])]), info: ["n": 1]).encoded())
        XCTAssertEqual(try Response.decode(SecureBytes(copying: valid)).result.array?.count, 2)
        let head: [UInt8] = [0, 1, 0, 0, 0, 0]  // version 1, status 0
        let cases: [(KeychainStatus, String, [UInt8])] = [
            (.badReq, "protocol version 7", [0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            (.decode, "shape 3", head + [3, 0, 0, 0, 0, 0, 0]),
            (.decode, "4 billion values announced", head + [2, 0xff, 0xff, 0xff, 0xff, 0, 0]),
            (.decode, "value kind 9", head + [2, 0, 0, 0, 1, 9, 0, 0, 0, 0, 0, 0]),
            (.decode, "one value shape with none", head + [1, 0, 0, 0, 0, 0, 0]),
            (.decode, "one value shape with two", head + [1, 0, 0, 0, 2] + [1, 0, 0, 0, 0] + [1, 0, 0, 0, 0] + [0, 0]),
            (.decode, "trailing byte", valid + [0]),
        ]
        for (status, what, payload) in cases {
            assertStatus(status, try Response.decode(SecureBytes(copying: payload)), what)
        }
        for cut in 0..<valid.count {
            assertStatus(.decode, try Response.decode(SecureBytes(copying: valid.prefix(cut))), "cut at \(cut)")
        }
    }
}

private func assertStatus<T>(_ status: KeychainStatus, _ body: @autoclosure () throws -> T, _ what: String,
                                file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertThrowsError(try body(), what, file: file, line: line) { error in
        XCTAssertEqual(error as? KeychainStatus, status, "\(what): got \(error)", file: file, line: line)
    }
}
