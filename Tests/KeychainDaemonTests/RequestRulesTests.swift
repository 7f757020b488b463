import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// The table of rights and the bounds of requests, through the real handlers.
final class RequestRulesTests: XCTestCase {
    private var d: InProcessDaemon!

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop() }

    func testAdministratorOperationsRefuseOtherUsersAndChangeNothing() throws {
        let outsider = InProcessDaemon.outsider
        for request in [Request(.setSettings, options: ["lock-timeout": .number(5)]),
                        Request(.groupAdd, options: ["name": "taken"]),
                        Request(.audit), Request(.verify), Request(.stop),
                        Request(.mount, options: ["mountpoint": .string(d.dir)])] {
            XCTAssertEqual(try d.call(request, as: outsider).status, .authFailed, "\(request.operation)")
        }
        let info = try d.call(Request(.info)).info
        XCTAssertEqual(info["lock-timeout"], .number(0), "the refused setting was not stored")
        let groups = try d.call(Request(.groupList))
        guard case .array(let listed) = groups.result else { return XCTFail("group list: \(groups.result)") }
        XCTAssertTrue(listed.isEmpty, "the refused group was not added")
        // Still serving after a refused stop.
        XCTAssertEqual(try d.call(Request(.ping)).status, .success)
    }

    func testOutsiderLearnsOnlyStateFromInfoAndCannotLockOrWatch() throws {
        let outsider = InProcessDaemon.outsider
        let info = try d.call(Request(.info), as: outsider)
        XCTAssertEqual(info.status, .success)
        XCTAssertEqual(Set(info.info.keys), ["state", "pid", "groups"])
        XCTAssertEqual(try d.call(Request(.lock), as: outsider).status, .authFailed)
        XCTAssertEqual(try d.call(Request(.watch), as: outsider).status, .authFailed)
        XCTAssertEqual(d.daemon.vault.lockState, .unlocked)
    }

    func testOnlyAGroupThatGrantsLockingLetsItsMembersLock() throws {
        // A member of the group's Unix group, entitled to read its items (mode 0440).
        let member = CallerIdentity(pid: getpid(), uid: 54_322, gid: 54_322, groups: [54_322], executable: nil)
        XCTAssertEqual(try d.call(Request(.groupAdd, options: ["name": "web", "gid": .number(54_322), "mode": .number(0o440)])).status,
                       .success)
        XCTAssertEqual(try d.call(Request(.lock), as: member).status, .authFailed, "entitled, but locking is not granted")
        XCTAssertEqual(d.daemon.vault.lockState, .unlocked)
        XCTAssertEqual(try d.call(Request(.groupSet, options: ["name": "web", "lock": .number(2)])).status, .param)
        XCTAssertEqual(try d.call(Request(.groupSet, options: ["name": "web", "lock": .number(1)]), as: member).status, .authFailed,
                       "a member cannot grant itself the lock")
        XCTAssertEqual(try d.call(Request(.lock), as: member).status, .authFailed)
        XCTAssertEqual(try d.call(Request(.groupSet, options: ["name": "web", "lock": .number(1)])).status, .success)
        XCTAssertEqual(try AccessGroupTable.load(from: d.daemon.vault).group(named: "web")?.grantsLock, true, "stored")
        XCTAssertEqual(try d.call(Request(.lock), as: InProcessDaemon.outsider).status, .authFailed, "not a member")
        XCTAssertEqual(d.daemon.vault.lockState, .unlocked)
        XCTAssertEqual(try d.call(Request(.lock), as: member).status, .success)
        XCTAssertEqual(d.daemon.vault.lockState, .locked)
        // The grant is listed.
        guard case .array(let listed) = try d.call(Request(.groupList)).result else { return XCTFail("no group list") }
        XCTAssertEqual(listed.first?.item?.attributes["lock"], .number(1))
    }

    func testSecretsBeyondWhatTheOperationTakesAreRefused() throws {
        let two = [try SecureBytes(copying: Array("a".utf8)), try SecureBytes(copying: Array("b".utf8))]
        XCTAssertEqual(try d.call(Request(.unlock, secrets: two)).status, .param)
        XCTAssertEqual(try d.call(Request(.unlock)).status, .param)
        XCTAssertEqual(try d.call(Request(.add, query: ["class": "genp", "svce": "s", "acct": "a"], secrets: two)).status, .param)
        XCTAssertEqual(try d.call(Request(.copyMatching, query: ["class": "genp", "svce": "s", "acct": "a"])).status,
                       .itemNotFound, "the refused add stored nothing")
        XCTAssertEqual(try d.call(Request(.lock, secrets: two)).status, .param)
        XCTAssertEqual(d.daemon.vault.lockState, .unlocked)
    }

    func testOutOfRangeSettingsAreRefusedAndNothingIsStored() throws {
        for (name, value): (OptionKey, Int64) in [("lock-timeout", Int64.max), ("lock-timeout", -1), ("lock-timeout", 31_536_001),
                              ("approval-timeout", 2_147_484), ("approval-timeout", 0),
                              ("approval-remember", Int64.max)] {
            let r = try d.call(Request(.setSettings, options: [name: .number(value), "approval-program": "/bin/true"]))
            XCTAssertEqual(r.status, .param, "\(name)=\(value)")
        }
        XCTAssertNil(try d.daemon.vault.setting("approval-program"), "a refused request stores none of its settings")
        XCTAssertEqual(try d.call(Request(.info)).info["lock-timeout"], .number(0))
        XCTAssertEqual(try d.call(Request(.setSettings, options: ["lock-timeout": .number(31_536_000)])).status, .success)
        XCTAssertEqual(try d.call(Request(.info)).info["lock-timeout"], .number(31_536_000))
        XCTAssertNotNil(try d.call(Request(.info)).info["locks-in"], "the status computation copes with the largest timeout")
    }

    func testGroupModesAndIdsOutOfRangeAreRefused() throws {
        XCTAssertEqual(try d.call(Request(.groupAdd, options: ["name": "g", "mode": .number(0o1000)])).status, .param)
        XCTAssertEqual(try d.call(Request(.groupAdd, options: ["name": "g", "owner": .number(-1)])).status, .param)
        XCTAssertEqual(try d.call(Request(.groupAdd, options: ["name": "g", "gid": .number(1 << 40)])).status, .param)
        XCTAssertEqual(try d.call(Request(.groupAdd, options: ["name": ""])).status, .param)
        XCTAssertEqual(try d.call(Request(.groupAdd, options: ["name": "g", "mode": .number(0o440)])).status, .success)
    }

    func testUnlockWithWrongPassphraseBacksOffWithoutHoldingOthers() throws {
        d.daemon.vault.lock()
        let wrong = Request(.unlock, secrets: [try SecureBytes(copying: Array("wrong".utf8))])
        let outsider = InProcessDaemon.outsider
        XCTAssertEqual(try d.call(wrong, as: outsider).status, .authFailed)
        // The outsider's second guess waits out its back-off (1 s) in the queue ...
        let guess = try d.connect(as: outsider)
        defer { close(guess) }
        let start = Date()
        try Frame.write(wrong.encoded(), to: guess)
        // ... while the owner is answered at once.
        XCTAssertEqual(try d.call(Request(.info)).status, .success)
        let right = Request(.unlock, secrets: [try SecureBytes(copying: Array(InProcessDaemon.passphrase.utf8))])
        XCTAssertEqual(try d.call(right).status, .success)
        XCTAssertLessThan(Date().timeIntervalSince(start), 0.9, "the owner was not held behind the outsider's back-off")
        guard let frame = try Frame.read(from: guess) else { return XCTFail("no answer to the second guess") }
        XCTAssertEqual(try Response.decode(frame).status, .authFailed)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.9, "the second guess waited for its back-off")
    }

    func testPipelinedRequestsAreEachAnswered() throws {
        try d.addPassword(service: "s", account: "a", secret: "one")
        let fd = try d.connect(as: InProcessDaemon.owner)
        defer { close(fd) }
        let request = try Request(.copyMatching, query: ["class": "genp", "svce": "s", "acct": "a", "r_Data": true]).encoded()
        try Frame.write(request, to: fd)
        try Frame.write(request, to: fd)
        try Frame.write(Request(.ping).encoded(), to: fd)
        for expected in ["one", "one"] {
            guard let frame = try Frame.read(from: fd) else { return XCTFail("missing reply") }
            XCTAssertEqual(secretText(try Response.decode(frame)), expected)
        }
        guard let last = try Frame.read(from: fd) else { return XCTFail("missing ping reply") }
        XCTAssertNotNil(try Response.decode(last).info["protocol"])
    }
}
