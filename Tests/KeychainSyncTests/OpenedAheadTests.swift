@testable import KeychainSync
import Foundation
@testable import KeychainCore
import KeychainCrypto
import KeychainSystem
import XCTest

/// `OpenedAhead`: the next batch of a long read opened while this one is written. Whichever
/// thread opens an entry (the worker, or the writing thread that arrives before the worker is
/// done), `take` gives the same checked, opened entry, once; a forged one is not opened.
final class OpenedAheadTests: XCTestCase {
    var dir = ""
    let circle = try! CircleKeys.generate()
    let writer = try! HostKeys.generate()

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "keychainfs-ahead-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func makeVault(_ name: String) throws -> Vault {
        try Vault.create(at: dir + "/\(name).vault", passphrase: SecureBytes(copying: Array("pw".utf8)), kdf: .minimum,
                         deviceKey: try DeviceKey.loadOrCreate(at: dir + "/device.key"))
    }

    /// `count` log entries: items of another vault, sealed and signed by `writer` as its engine would.
    func logEntries(_ count: Int) throws -> [SyncServer.LogEntry] {
        let source = try makeVault("source")
        try source.addAll((0..<count).map { n in
            (["class": "genp", "svce": "ahead", "acct": .string("acct-\(n)"), "sync": true],
             try SecureBytes(copying: Array("secret \(n)".utf8)))
        }, accessGroups: ["default"])
        return try source.syncChanges().changed.enumerated().map { i, change in
            let payload = try XCTUnwrap(try source.syncPayload(uuid: change.uuid))
            defer { payload.wipe() }
            let record = try SyncRecord.seal(payload, uuid: change.uuid, version: 1, circle: circle, writer: writer)
            return SyncServer.LogEntry(seq: Int64(i + 1), token: circle.token(of: change.uuid), version: 1,
                                       deleted: false, record: record, length: record.count)
        }
    }

    var config: SyncConfig {
        var c = SyncConfig(state: .member, conninfo: "", name: "here")
        c.members = [SyncConfig.Member(hostID: writer.hostID, signKey: writer.signPublic, boxKey: writer.boxPublic, name: "w")]
        return c
    }

    /// Waits until `worker` has run every job given so far and let go of it: their vault is
    /// closed before the directory is removed.
    func drain(_ worker: SerialThread) {
        let ran = ConditionLock(false)
        worker.run { ran.withLockWakingWaiters { $0 = true } }
        ran.wait { $0 ? .done(()) : .wait }
        worker.finish()
    }

    func secret(_ p: SyncPayload?) -> String? {
        p?.secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// Every entry of `entries` is given by `take` once, opened, with its item sealed for `vault`.
    func assertTakesEach(_ ahead: OpenedAhead, _ entries: [SyncServer.LogEntry], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(ahead.uuids.count, entries.count, file: file, line: line)
        var secrets: Set<String> = []
        for e in entries {
            guard let got = ahead.take(e.seq, signKey: writer.signPublic, epoch: 1) else {
                XCTFail("entry \(e.seq) was not opened", file: file, line: line)
                continue
            }
            XCTAssertEqual(circle.token(of: got.uuid), e.token, file: file, line: line)
            XCTAssertNotNil(got.prepared.item, "sealed for this vault", file: file, line: line)
            if let s = secret(got.payload) { secrets.insert(s) }
            got.payload?.wipe()
            XCTAssertNil(ahead.take(e.seq, signKey: writer.signPublic, epoch: 1), "taken once", file: file, line: line)
        }
        XCTAssertEqual(secrets, Set((0..<entries.count).map { "secret \($0)" }), file: file, line: line)
    }

    func testAWorkerThatHasNotStartedLeavesTheWholeBatchToTheWritingThread() throws {
        let vault = try makeVault("here")
        let entries = try logEntries(OpenedAhead.chunkSize * 2 + 3)
        let worker = try SerialThread()
        defer { drain(worker) }
        // The worker is busy with an earlier job until every entry was taken.
        let release = ConditionLock(false)
        worker.run { release.wait { $0 ? .done(()) : .wait } }
        let ahead = OpenedAhead(entries, on: worker, circle: circle, config: config, vault: vault)
        assertTakesEach(ahead, entries)
        release.withLockWakingWaiters { $0 = true }
    }

    func testTheWorkerAndTheWritingThreadShareABatch() throws {
        let vault = try makeVault("here")
        let entries = try logEntries(OpenedAhead.chunkSize * 6)
        let worker = try SerialThread()
        defer { drain(worker) }
        let ahead = OpenedAhead(entries, on: worker, circle: circle, config: config, vault: vault)
        assertTakesEach(ahead, entries)
    }

    func testAForgedEntryIsNotOpenedAndTheOthersAre() throws {
        let vault = try makeVault("here")
        var entries = try logEntries(5)
        entries[2].record[entries[2].record.count - 1] ^= 1
        let worker = try SerialThread()
        defer { drain(worker) }
        let ahead = OpenedAhead(entries, on: worker, circle: circle, config: config, vault: vault)
        XCTAssertNil(ahead.take(3, signKey: writer.signPublic, epoch: 1), "left to the caller, which refuses it")
        for seq: Int64 in [1, 2, 4, 5] { XCTAssertNotNil(ahead.take(seq, signKey: writer.signPublic, epoch: 1)) }
    }

    func testWithNoThreadNothingIsOpenedAhead() throws {
        let vault = try makeVault("here")
        let entries = try logEntries(3)
        let ahead = OpenedAhead(entries, on: nil, circle: circle, config: config, vault: vault)
        XCTAssertTrue(ahead.uuids.isEmpty)
        XCTAssertNil(ahead.take(1, signKey: writer.signPublic, epoch: 1), "each entry is opened in order by the caller")
    }
}
