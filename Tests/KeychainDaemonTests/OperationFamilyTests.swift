import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// Each family's handlers through a real daemon over a socketpair, with the typed requests a
/// client sends and the typed replies it reads.
final class OperationFamilyTests: XCTestCase {
    private var d: InProcessDaemon!

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop() }

    private func bytes(_ s: String) throws -> SecureBytes { try SecureBytes(copying: Array(s.utf8)) }

    private func text(_ r: ItemsReply) -> String? {
        guard case .value(.data(let d)) = r.result else { return nil }
        return d.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    private let item: Attributes = [.class: "genp", .service: "db", .account: "app"]

    func testItemsAddSearchUpdateDelete() throws {
        _ = try d.reply(ItemAdd(attributes: item, secret: try bytes("one")), ItemsReply.self)
        var query = item
        query[.returnData] = true
        XCTAssertEqual(text(try d.reply(ItemSearch(query: query), ItemsReply.self)), "one")
        XCTAssertEqual(try d.status(of: ItemAdd(attributes: item, secret: try bytes("again"))), .duplicateItem)
        _ = try d.reply(ItemUpdate(query: item, changes: [:], secret: try bytes("two")), StatusReply.self)
        XCTAssertEqual(text(try d.reply(ItemSearch(query: query), ItemsReply.self)), "two")
        XCTAssertEqual(try d.status(of: ItemSearch(query: query), as: InProcessDaemon.outsider), .itemNotFound,
                       "an outsider finds nothing")
        XCTAssertEqual(try d.status(of: ItemDelete(query: item), as: InProcessDaemon.outsider), .itemNotFound)
        _ = try d.reply(ItemDelete(query: item), StatusReply.self)
        XCTAssertEqual(try d.status(of: ItemSearch(query: query)), .itemNotFound)
    }

    func testAGroupChangeThatDoesNotDecodeIsRefusedAndAudited() throws {
        _ = try d.reply(GroupRequest.add(GroupChange(name: "team", mode: 0o440)), StatusReply.self)
        XCTAssertEqual(try d.status(of: Request(.groupSet, options: ["name": "team", "mode": .number(0o1000)])), .param)
        let listed = try d.reply(GroupRequest.list, ItemsReply.self).result.array ?? []
        XCTAssertEqual(listed.compactMap { $0.item?.attributes[AttributeKey(rawValue: "name")]?.stringValue }, ["team"])
        let log = try d.reply(AuditRequest.read(AuditQuery(events: ["groups-changed-failed"])), AuditLines.self).log
        XCTAssertTrue(log.contains("groups-changed-failed"), log)
    }

    func testTheAuditLogsReadCheckAndRotationHaveTheirOwnRights() throws {
        let auditor = CallerIdentity(pid: getpid(), uid: 54_323, gid: 54_323, groups: [54_323], executable: nil)
        _ = try d.reply(GroupRequest.add(GroupChange(name: "audit", gid: 54_323, mode: 0o440, grantsAudit: true)), StatusReply.self)
        XCTAssertFalse(try d.reply(AuditRequest.read(AuditQuery()), AuditLines.self, as: auditor).log.isEmpty)
        XCTAssertEqual(try d.status(of: AuditRequest.verify, as: auditor), .authFailed)
        XCTAssertEqual(try d.status(of: AuditRequest.rotate, as: auditor), .authFailed)
        let chain = try d.reply(AuditRequest.verify, AuditChain.self)
        XCTAssertGreaterThan(chain.lines, 0)
        XCTAssertNil(chain.firstBreak)
        let rotated = try d.reply(AuditRequest.rotate, AuditRotation.self).rotated
        XCTAssertEqual(access(rotated, F_OK), 0, "the rotated file \(rotated) exists")
    }

    func testAdministrationReplies() throws {
        XCTAssertEqual(try d.reply(BareRequest(.ping), PingReply.self).pid, Int64(getpid()))
        let status = try d.reply(BareRequest(.info), VaultStatus.self)
        XCTAssertTrue(status.isUnlocked)
        XCTAssertEqual(status.groups, ["default"])
        XCTAssertEqual(status.path, d.vaultPath)
        XCTAssertNotNil(status.mounts, "an administrator sees the mounts")
        let outsider = try d.reply(BareRequest(.info), VaultStatus.self, as: InProcessDaemon.outsider)
        XCTAssertEqual(outsider.groups, [])
        XCTAssertNil(outsider.items, "an outsider learns no count")
        XCTAssertNil(outsider.path)
        _ = try d.reply(ItemAdd(attributes: item, secret: try bytes("s")), ItemsReply.self)
        let report = try d.reply(BareRequest(.verify), VerifyReport.self)
        XCTAssertEqual(report.checked, 1)
        XCTAssertEqual(report.damaged, [])
        XCTAssertNil(report.auditBreak)
        _ = try d.reply(SettingsChange(lockTimeout: 120), StatusReply.self)
        XCTAssertEqual(try d.reply(BareRequest(.info), VaultStatus.self).lockTimeout, 120)
    }

    /// The daemon counts each request's wait and service time, the owner's apart from others'.
    func testServiceTimesCountEachRequestByClassOfCaller() throws {
        _ = try d.reply(ServiceTimesRequest(reset: true), ServiceTimes.self)
        for _ in 0..<5 { _ = try d.reply(BareRequest(.ping), PingReply.self) }
        for _ in 0..<3 { _ = try d.reply(BareRequest(.ping), PingReply.self, as: InProcessDaemon.outsider) }
        let times = try d.reply(ServiceTimesRequest(), ServiceTimes.self)
        XCTAssertEqual(times.privileged.requests, 6, "the reset request and five pings")
        XCTAssertEqual(times.others.requests, 3)
        XCTAssertLessThanOrEqual(times.privileged.waitMedian, times.privileged.waitP99)
        XCTAssertGreaterThan(times.privileged.serviceP99, 0)
        XCTAssertEqual(try d.status(of: ServiceTimesRequest(), as: InProcessDaemon.outsider), .authFailed)
    }

    func testBackupExportMountAndSyncReplies() throws {
        _ = try d.reply(ItemAdd(attributes: item, secret: try bytes("s")), ItemsReply.self)
        let piece = try d.reply(ExportRequest.start(passphrase: try bytes("backup pass"), kdf: "interactive", synchronizableOnly: false),
                                ExportPiece.self)
        XCTAssertEqual(piece.items, 1)
        XCTAssertEqual(piece.size, Int64(piece.data.count))
        XCTAssertNil(piece.transfer, "one piece holds it")
        XCTAssertEqual(try d.status(of: MountRequest.mount(point: "relative/dir", options: "")), .param)
        XCTAssertEqual(try d.status(of: MountRequest.unmount(point: d.dir + "/nothing")), .itemNotFound)
        XCTAssertEqual(try d.reply(SyncRequest.status, SyncReply.self).status["state"], "none")
    }
}

extension InProcessDaemon {
    /// A typed request's typed reply. - Throws: the reply's status when it is not success.
    func reply<R: TypedReply>(_ request: some TypedRequest, _ type: R.Type, as caller: CallerIdentity = owner) throws -> R {
        let r = try call(request.request, as: caller)
        guard r.status == .success else { throw r.status }
        return try R(decoding: r)
    }

    func status(of request: some TypedRequest, as caller: CallerIdentity = owner) throws -> KeychainStatus {
        try status(of: request.request, as: caller)
    }

    func status(of request: Request, as caller: CallerIdentity = owner) throws -> KeychainStatus {
        try call(request, as: caller).status
    }
}
