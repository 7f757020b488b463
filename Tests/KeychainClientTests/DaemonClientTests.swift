import Foundation
import Glibc
@testable import KeychainClient
import KeychainCrypto
import KeychainModel
import KeychainProtocol
import XCTest

/// The client side of the socket against a peer this test plays itself on a real Unix socket:
/// what it sends, how it reads the answer, and which statuses it throws. No daemon runs.
final class DaemonClientTests: XCTestCase {
    var dir = ""
    var listener: Int32 = -1
    var peer: Thread?
    /// The caller's runtime directory setting, put back in tearDown.
    var runtimeDirectory: String?

    override func setUpWithError() throws {
        runtimeDirectory = Paths.environment("KEYCHAINFS_RUNTIME_DIR")
        var template = Array("/tmp/keychainfs-test-client-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp: errno \(errno)") }
        dir = String(cString: made)
    }

    override func tearDown() {
        if listener >= 0 { close(listener) }
        listener = -1
        if !dir.isEmpty { try? FileManager.default.removeItem(atPath: dir) }
        if let runtimeDirectory { setenv("KEYCHAINFS_RUNTIME_DIR", runtimeDirectory, 1) } else { unsetenv("KEYCHAINFS_RUNTIME_DIR") }
        super.tearDown()
    }

    /// Listens at `dir/s.sock`; `serve` gets each accepted connection on another thread.
    func listen(_ serve: @escaping @Sendable (Int32) -> Void) throws -> String {
        let path = dir + "/s.sock"
        listener = try UnixSocket.listen(at: path, mode: 0o600)
        let fd = listener
        let t = Thread {
            let c = accept(fd, nil, nil)
            guard c >= 0 else { return }
            serve(c)
            close(c)
        }
        t.start()
        peer = t
        return path
    }

    func testARequestIsOneFrameAndTheReplyIsItsResponse() throws {
        let seen = Locked<(KeychainProtocol.Operation, Attributes, [UInt8])?>(nil)
        let path = try listen { c in
            guard let frame = try? Frame.read(from: c), let r = try? Request.decode(frame) else { return }
            seen.withLock { $0 = (r.operation, r.query, r.secrets.first.map(bytes) ?? []) }
            let reply = Response(result: .value(.data(try! SecureBytes(copying: Array("s3cret".utf8)))), info: ["n": 1])
            try? Frame.write(try! reply.encoded(), to: c)
        }
        let client = try DaemonClient.connect(socketPath: path)
        let response = try client.send(Request(.copyMatching, query: [.service: "db"], secrets: [try SecureBytes(copying: [1, 2])]))
        XCTAssertEqual(response.result.value?.data.map(bytes), Array("s3cret".utf8))
        XCTAssertEqual(response.info, ["n": 1])
        let got = try XCTUnwrap(seen.withLock { $0 })
        XCTAssertEqual(got.0, .copyMatching)
        XCTAssertEqual(got.1, [.service: "db"])
        XCTAssertEqual(got.2, [1, 2])
    }

    /// Plays a daemon that answers every request on one connection with a secret; one from
    /// before `lookup` answers a lookup with errSecBadReq, as its decoder does. Records each
    /// request's operation.
    func listenAsDaemon(knowingLookups: Bool, seen: Locked<[KeychainProtocol.Operation]>) throws -> String {
        try listen { c in
            while let frame = try? Frame.read(from: c) {
                let op = (try? Request.decode(frame))?.operation
                seen.withLock { $0.append(op ?? .ping) }
                let reply = op == .lookup && !knowingLookups ? Response(status: .badReq)
                    : Response(result: .value(.data(try! SecureBytes(copying: Array("s3cret".utf8)))))
                try? Frame.write(try! reply.encoded(), to: c)
            }
        }
    }

    func testAQueryOfALookupsShapeIsSentAsALookup() throws {
        let seen = Locked<[KeychainProtocol.Operation]>([])
        let client = try DaemonClient.connect(socketPath: try listenAsDaemon(knowingLookups: true, seen: seen))
        let lookup: Attributes = [.class: "genp", .service: "db", .account: "app", .returnData: true]
        XCTAssertEqual(try client.send(Request(.copyMatching, query: lookup)).result.value?.data.map(bytes), Array("s3cret".utf8))
        _ = try client.send(Request(.copyMatching, query: [.class: "genp", .service: "db", .returnData: true]))
        _ = try client.send(Request(.copyMatching, query: lookup.merging([.matchLimit: .matchLimitAll]) { a, _ in a }))
        _ = try client.send(Request(.delete, query: [.class: "genp", .service: "db", .account: "app"]))
        _ = try client.send(Request(.copyMatching, query: lookup))
        XCTAssertEqual(seen.withLock { $0 }, [.lookup, .copyMatching, .copyMatching, .delete, .lookup])
    }

    func testADaemonFromBeforeLookupsGetsThemAsCopyMatching() throws {
        let seen = Locked<[KeychainProtocol.Operation]>([])
        let client = try DaemonClient.connect(socketPath: try listenAsDaemon(knowingLookups: false, seen: seen))
        let lookup: Attributes = [.class: "genp", .service: "db", .account: "app", .returnData: true]
        for _ in 0..<2 {
            XCTAssertEqual(try client.send(Request(.copyMatching, query: lookup)).result.value?.data.map(bytes), Array("s3cret".utf8))
        }
        XCTAssertEqual(seen.withLock { $0 }, [.lookup, .copyMatching, .copyMatching], "asked once, then the general way")
    }

    func testAStatusOtherThanSuccessIsThrown() throws {
        let path = try listen { c in
            _ = try? Frame.read(from: c)
            try? Frame.write(try! Response(status: .itemNotFound).encoded(), to: c)
        }
        let client = try DaemonClient.connect(socketPath: path)
        XCTAssertThrowsError(try client.send(Request(.copyMatching))) { XCTAssertEqual($0 as? KeychainStatus, .itemNotFound) }
    }

    func testAPeerThatHangsUpIsNotAvailable() throws {
        let path = try listen { c in _ = try? Frame.read(from: c) }
        let client = try DaemonClient.connect(socketPath: path)
        XCTAssertThrowsError(try client.send(Request(.ping))) { XCTAssertEqual($0 as? KeychainStatus, .notAvailable) }
    }

    func testAGarbledReplyIsRefused() throws {
        let path = try listen { c in
            _ = try? Frame.read(from: c)
            try? Frame.write(try! SecureBytes(copying: [0, 1, 0, 0]), to: c)
        }
        let client = try DaemonClient.connect(socketPath: path)
        XCTAssertThrowsError(try client.send(Request(.ping))) { XCTAssertEqual($0 as? KeychainStatus, .decode) }
    }

    func testEventsAreReadUntilThePeerCloses() throws {
        let path = try listen { c in
            for n in 0..<3 { try? Frame.write(try! Response(info: ["seq": .number(Int64(n))]).encoded(), to: c) }
        }
        let client = try DaemonClient.connect(socketPath: path)
        for n in 0..<3 { XCTAssertEqual(try client.receive()?.info["seq"], .number(Int64(n))) }
        XCTAssertNil(try client.receive())
    }

    func testNothingListeningIsNotAvailable() {
        XCTAssertThrowsError(try DaemonClient.connect(socketPath: dir + "/none.sock")) {
            XCTAssertEqual($0 as? KeychainStatus, .notAvailable)
        }
        setenv("KEYCHAINFS_RUNTIME_DIR", dir, 1)
        XCTAssertThrowsError(try DaemonClient.connect(vaultPath: dir + "/a.vault")) {
            XCTAssertEqual($0 as? KeychainStatus, .notAvailable, "no daemon and none to start")
        }
        XCTAssertThrowsError(try DaemonClient.connect(vaultPath: dir + "/a.vault", startWith: ["/bin/false"])) {
            XCTAssertEqual($0 as? KeychainStatus, .noSuchKeychain, "no vault file: nothing is started")
        }
    }

    func testARuntimeDirectoryOthersCanWriteIsRefused() throws {
        let shared = dir + "/shared"
        XCTAssertEqual(mkdir(shared, 0o777), 0)
        XCTAssertEqual(chmod(shared, 0o777), 0, "past the umask")
        setenv("KEYCHAINFS_RUNTIME_DIR", shared, 1)
        XCTAssertThrowsError(try DaemonClient.connect(vaultPath: dir + "/a.vault")) { error in
            let refused = error as? RuntimeDirectoryError
            XCTAssertEqual(refused?.directory, shared)
            XCTAssertEqual(refused?.status, .io)
            XCTAssertEqual(KeychainStatus(known: error), .io)
            XCTAssertTrue(refused?.description.hasPrefix("refusing the runtime directory \(shared): ") ?? false, "\(error)")
        }
    }

    func testDaemonExitCodesBecomeTheirStatuses() {
        XCTAssertEqual(DaemonClient.status(forExit: KeychainStatus.invalidKeychain.exitCode), .invalidKeychain)
        XCTAssertEqual(DaemonClient.status(forExit: KeychainStatus.noSuchKeychain.exitCode), .noSuchKeychain)
        XCTAssertEqual(DaemonClient.status(forExit: KeychainStatus.io.exitCode), .io)
        XCTAssertEqual(DaemonClient.status(forExit: KeychainStatus.decode.exitCode), .decode)
        XCTAssertEqual(DaemonClient.status(forExit: 1), .notAvailable)
        XCTAssertEqual(DaemonClient.status(forExit: 0), .notAvailable)
    }

    func testTheLastLineOfADaemonLogLosesItsPrefix() throws {
        let log = dir + "/d.log"
        try "keychainfs-daemon: started\nkeychainfs-daemon: the TPM did not unseal the device key\n"
            .write(toFile: log, atomically: false, encoding: .utf8)
        XCTAssertEqual(DaemonClient.lastLine(of: log), "the TPM did not unseal the device key")
        XCTAssertNil(DaemonClient.lastLine(of: dir + "/missing.log"))
        try "".write(toFile: log, atomically: false, encoding: .utf8)
        XCTAssertNil(DaemonClient.lastLine(of: log))
    }
}

func bytes(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

/// A value the peer's thread sets and the test reads.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func withLock<R>(_ body: (inout T) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
