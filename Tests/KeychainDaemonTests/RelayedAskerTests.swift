import Glibc
@testable import KeychainDaemon
import KeychainfsAccess
import KeychainModel
import KeychainProtocol
import KeychainSystem
import XCTest

/// Who the unlock program is told asks: a caller named in an unlock request (`for-uid`,
/// `for-pid`) is taken only from a relay running the daemon's own executable (the Secret
/// Service provider); from any other socket caller the request is refused.
final class RelayedAskerTests: XCTestCase {
    let own = ProcessFiles.executable(of: getpid())

    func relay(_ exe: String?) -> CallerIdentity {
        CallerIdentity(pid: 4242, uid: 1000, gid: 1000, groups: [1000], executable: exe)
    }

    func testNoClaimIsTheSocketCallerAlone() throws {
        XCTAssertNil(try ApprovalAgent.relayedAsker(nil, relay: relay("/usr/bin/python3")))
    }

    func testTheDaemonsOwnExecutableMayNameItsCaller() throws {
        let asker = try XCTUnwrap(ApprovalAgent.relayedAsker(RelayedCaller(uid: 1234, pid: 77), relay: relay(own)))
        XCTAssertEqual(asker.uid, 1234)
        XCTAssertEqual(asker.pid, 77)
        XCTAssertNil(asker.executable)
        XCTAssertEqual(asker.groups, [])
    }

    func testAnyOtherCallerOrAMalformedClaimIsRefused() throws {
        for exe in ["/usr/bin/python3", nil] as [String?] {
            XCTAssertThrowsError(try ApprovalAgent.relayedAsker(RelayedCaller(uid: 0, pid: 1), relay: relay(exe))) {
                XCTAssertEqual($0 as? KeychainStatus, .param)
            }
        }
        let claim = Request(.unlock, options: ["by": .string("approval-program"), "for-uid": .number(0), "for-pid": .number(1)])
        guard case .byApprovalProgram(let relayed) = try UnlockRequest(decoding: claim) else { return XCTFail("not by the program") }
        XCTAssertEqual(relayed, RelayedCaller(uid: 0, pid: 1))
        for bad: Options in [["for-uid": .number(0)], ["for-pid": .number(1)], ["for-uid": .number(-1), "for-pid": .number(1)],
                             ["for-uid": .number(0), "for-pid": .number(Int64(Int32.max) + 1)],
                             ["for-uid": .string("0"), "for-pid": .number(1)]] {
            let request = Request(.unlock, options: bad.merging(["by": .string("approval-program")]) { a, _ in a })
            XCTAssertThrowsError(try UnlockRequest(decoding: request), "\(bad)") {
                XCTAssertEqual($0 as? KeychainStatus, .param)
            }
        }
    }
}
